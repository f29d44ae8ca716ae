"""The dependency-rule checker finds wrong includes (file and line) and passes right ones.

Each case writes a small source tree in a temporary folder and checks it (ctest's
include_layers checks this checkout).
"""

import os
import tempfile
import unittest

import include_layers


class IncludeLayersTest(unittest.TestCase):
    def check(self, files):
        with tempfile.TemporaryDirectory() as root:
            for rel_path, text in files.items():
                os.makedirs(os.path.join(root, os.path.dirname(rel_path)), exist_ok=True)
                with open(os.path.join(root, rel_path), "w", encoding="utf-8") as f:
                    f.write(text)
            return include_layers.check_tree(root)

    def test_lower_room_including_a_higher_one_is_reported_with_file_and_line(self):
        violations = self.check(
            {
                "engine/model/model.cc": (
                    '#include "engine/util/x.h"\n\n#include "server/exec/scheduler.h"\n'
                ),
            }
        )
        self.assertEqual(len(violations), 1)
        self.assertTrue(
            violations[0].startswith(
                'engine/model/model.cc:3: engine/model includes "server/exec/scheduler.h" of server'
            ),
            violations[0],
        )

    def test_each_forbidden_direction_is_reported(self):
        violations = self.check(
            {
                "metrics/rouge.cc": '#include "engine/model/model.h"\n',
                "tasks/api/task.cc": '#include "hgeval/v1/models.pb.h"\n',
                "tasks/api/registry.cc": '#include "tasks/harness/evaluator.h"\n',
                "tasks/models/engine_language_model.cc": '#include "tasks/harness/evaluator.h"\n',
                "tasks/niah/sweep.cc": '#include "tasks/niah/heatmap/niah_heatmap.h"\n',
                "tasks/niah/tools/niah_main.cc": '#include "client/niah_outputs.h"\n',
                "server/rpc/model_service.cc": '#include "client/client.h"\n',
                "client/client.cc": '#include "server/exec/executor.h"\n',
                "engine/tokenizer/hf.cc": '#include "engine/runtime/generation.h"\n',
                "engine/util/parallel_for.h": '#include "engine/loader/checkpoint.h"\n',
                "engine/model/model.cc": '#include "engine/tools/cli_flags.h"\n',
                "server/exec/executor.cc": '#include "tests/support/paths.h"\n',
                "client/hgeval_main.cc": '#include "bench/timed_model.h"\n',
            }
        )
        self.assertEqual(len(violations), 13, "\n".join(violations))
        for violation in violations:
            self.assertRegex(violation, r"^[\w/]+\.(cc|h):1: ")

    def test_the_client_library_reaches_neither_the_engine_nor_the_tasks(self):
        violations = self.check(
            {
                "client/client.cc": '#include "engine/model/model.h"\n#include "client/client.h"\n',
                "client/results_table.cc": (
                    '#include "tasks/harness/evaluator.h"\n'
                    '#include "tasks/report/results_table.h"\n#include "hgeval/v1/jobs.pb.h"\n'
                ),
                # The `hgeval` program beside it may use the tasks and the client library.
                "client/hgeval_main.cc": (
                    '#include "tasks/harness/evaluator.h"\n#include "client/client.h"\n'
                ),
            }
        )
        self.assertEqual(
            sorted(v.split(" ")[0] for v in violations),
            ["client/client.cc:1:", "client/results_table.cc:1:"],
            "\n".join(violations),
        )

    def test_server_rooms_include_only_the_rooms_below_them(self):
        violations = self.check(
            {
                # Upward: core and store sit below the jobs and the handlers.
                "server/core/log.cc": '#include "server/jobs/job_manager.h"\n',
                "server/store/result_store.cc": '#include "server/exec/executor.h"\n',
                # Sideways: the HTTP gateway is a client of the service, not of its handlers.
                "server/http/openai_completions.cc": '#include "server/rpc/model_service.h"\n',
                "server/exec/scheduler.cc": '#include "sqlite3.h"\n',
                # Allowed: handlers over jobs and the executor, the program over every room.
                "server/rpc/job_service.cc": (
                    '#include "server/jobs/job_manager.h"\n#include "server/exec/executor.h"\n'
                ),
                "server/server_main.cc": (
                    '#include "server/http/openai_http_server.h"\n#include "server/rpc/job_service.h"\n'
                ),
            }
        )
        self.assertEqual(
            sorted(v.split(" ")[0] for v in violations),
            [
                "server/core/log.cc:1:",
                "server/exec/scheduler.cc:1:",
                "server/http/openai_completions.cc:1:",
                "server/store/result_store.cc:1:",
            ],
            "\n".join(violations),
        )

    def test_service_only_libraries_stay_in_their_rooms(self):
        violations = self.check(
            {
                "engine/runtime/scoring.cc": "#include <grpcpp/grpcpp.h>\n",
                "tasks/harness/evaluator.cc": '#include "google/protobuf/message.h"\n',
                "tasks/niah/output.cc": "#include <cairo.h>\n",
                "engine/cpu/ops.cc": "#include <cuda_runtime.h>\n",
                "client/client.cc": "#include <sqlite3.h>\n",
            }
        )
        self.assertEqual(len(violations), 5, "\n".join(violations))
        self.assertIn(
            "engine/runtime/scoring.cc:1: engine/runtime includes <grpcpp/grpcpp.h> (grpc); "
            "of the service-only libraries engine/runtime may use none of them",
            violations,
        )

    def test_allowed_directions_pass(self):
        self.assertEqual(
            self.check(
                {
                    "engine/cpu/hgrn2.cc":
                        '#include "engine/model/model.h"\n#include <absl/status/status.h>\n',
                    "engine/cuda/device.h": "#include <cuda_runtime_api.h>\n",
                    "tasks/niah/sweep.cc":
                        '#include "engine/runtime/scoring.h"\n#include "metrics/niah_metrics.h"\n',
                    "tasks/niah/heatmap/niah_heatmap.cc":
                        '#include <cairo.h>\n#include "metrics/niah_metrics.h"\n',
                    "tasks/niah/tools/niah_main.cc":
                        '#include "tasks/niah/heatmap/niah_heatmap.h"\n',
                    "server/rpc/model_service.h":
                        '#include <grpcpp/grpcpp.h>\n#include "hgeval/v1/models.grpc.pb.h"\n',
                    "client/niah_outputs.cc": '#include "tasks/niah/heatmap/niah_heatmap.h"\n',
                    "tests/server/e2e_test.cc":
                        '#include "client/client.h"\n#include "server/exec/executor.h"\n',
                    "bench/server_load_bench.cc":
                        '#include "client/client.h"\n#include "tests/support/paths.h"\n',
                }
            ),
            [],
        )

    def test_a_source_file_outside_every_room_is_reported(self):
        violations = self.check({"report/table.cc": '#include "tasks/harness/evaluator.h"\n'})
        self.assertEqual(len(violations), 1)
        self.assertTrue(violations[0].startswith("report/table.cc:1: in no room"), violations[0])


if __name__ == "__main__":
    unittest.main()
