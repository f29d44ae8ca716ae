"""scripts/train/fla_recurrent_models.py (the MQAR trainer's plain-PyTorch HGRN2/HGRN) run
through its numpy twin, in float64: the chunkwise recurrences equal the step-by-step ones,
the parameter layout is fla's, and the whole model reproduces fla's reference logits
(tests/golden). Runs on Debian's python3 with python3-numpy (no PyTorch needed)."""
import json
import os
import sys
import unittest

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "scripts", "train"))
import fla_recurrent_models as frla  # noqa: E402

GOLDEN = os.path.join(REPO, "tests", "golden")


class ChunkedRecurrenceTest(unittest.TestCase):
    def test_chunked_gla_equals_the_step_by_step_recurrence(self):
        rng = np.random.default_rng(1)
        for t_len, chunk in ((1, 16), (7, 4), (16, 16), (37, 16), (64, 8)):
            b, h, k_dim, v_dim = 2, 3, 5, 4
            q, k = rng.normal(size=(2, b, h, t_len, k_dim))
            v = rng.normal(size=(b, h, t_len, v_dim))
            log_gate = -3 * np.abs(rng.normal(size=(b, h, t_len, k_dim)))
            log_gate[0, 0, :, 0] = -200.0  # a gate that forgets everything: no overflow
            got = frla.chunked_gla(frla.NumpyOps, q, k, v, log_gate, chunk)
            want = frla.sequential_gla(q, k, v, log_gate)
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, err_msg=f"T={t_len}")

    def test_chunked_diagonal_scan_equals_the_step_by_step_recurrence(self):
        rng = np.random.default_rng(2)
        for t_len, chunk in ((1, 16), (9, 4), (50, 16)):
            x = rng.normal(size=(2, t_len, 6))
            log_gate = -3 * np.abs(rng.normal(size=(2, t_len, 6)))
            log_gate[1, :, 2] = -200.0
            got = frla.chunked_diagonal_scan(frla.NumpyOps, x, log_gate, chunk)
            want = frla.sequential_diagonal_scan(x, log_gate)
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, err_msg=f"T={t_len}")

    def test_causal_conv_is_torch_conv1d_with_left_padding(self):
        rng = np.random.default_rng(3)
        x = rng.normal(size=(2, 9, 5))
        weight = rng.normal(size=(5, 1, 4))
        got = frla._causal_conv(frla.NumpyOps, x, weight)
        for t in range(9):
            want = sum(weight[:, 0, j] * x[:, t - 3 + j] for j in range(4) if t - 3 + j >= 0)
            np.testing.assert_allclose(got[:, t], want, rtol=0, atol=1e-12)


class FlaLayoutTest(unittest.TestCase):
    def test_parameter_names_and_shapes_are_flas(self):
        for name in ("hgrn2", "hgrn"):
            folder = os.path.join(GOLDEN, name)
            stored = frla.read_safetensors(os.path.join(folder, "model.safetensors"))
            with open(os.path.join(folder, "config.json")) as f:
                config = json.load(f)
            config["intermediate_size"] = frla.fla_intermediate_size(config["hidden_size"])
            shapes = frla.parameter_shapes(config)
            self.assertEqual({k: tuple(v.shape) for k, v in stored.items()}, shapes, name)

    def test_mqar_configs_name_every_tensor_the_model_makes(self):
        for arch in ("hgrn2", "hgrn"):
            for conv in (False, True):
                config = frla.hgrn_config(arch, 64, 8192, 1, conv, 512)
                shapes = frla.parameter_shapes(config)
                self.assertNotIn("lm_head.weight", shapes)  # tied
                self.assertEqual(any("conv1d" in k for k in shapes), conv)
                rng = np.random.default_rng(4)
                weights = {k: rng.normal(size=s) * 0.1 for k, s in shapes.items()}
                logits = frla.fla_forward(frla.NumpyOps, weights, config,
                                          rng.integers(0, 8192, size=(2, 19)))
                self.assertEqual(logits.shape, (2, 19, 8192))
                self.assertTrue(np.isfinite(logits).all())


class GoldenLogitsTest(unittest.TestCase):
    def test_numpy_twin_reproduces_flas_reference_logits(self):
        # The references are float32 (recurrences evaluated in float64): a float64 model
        # is within float32 rounding (~1e-5 at |logit| ~ 5); a wrong term is ~1e-1 off.
        for name in ("hgrn2", "hgrn"):
            results = frla.golden_max_abs_diffs(os.path.join(GOLDEN, name),
                                                frla.numpy_forward)
            self.assertEqual([t for t, _, _ in results], [1, 7, 64, 65, 300])
            for t_len, diff, _ in results:
                self.assertLessEqual(diff, 3e-5, f"{name} T={t_len}")


if __name__ == "__main__":
    unittest.main()
