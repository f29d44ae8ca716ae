#include "server/jobs/job_shard_outcome.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace hgeval::server {

std::string SerializeShardOutcome(const ShardOutcome& outcome) {
  nlohmann::json json = {{"task_result", absl::Base64Escape(outcome.result.SerializeAsString())},
                         {"task_report", outcome.task_report},
                         {"results_json", outcome.results_json},
                         {"results_csv", outcome.results_csv},
                         {"requests_total", outcome.requests_total},
                         {"requests_cached", outcome.requests_cached},
                         {"requests_computed", outcome.requests_computed},
                         {"store_seconds", outcome.store_seconds},
                         {"prepare_seconds", outcome.prepare_seconds},
                         {"kind", static_cast<int>(outcome.kind)},
                         {"task_index", outcome.task_index}};
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

absl::StatusOr<ShardOutcome> ParseShardOutcome(const std::string& bytes) {
  try {
    const nlohmann::json json = nlohmann::json::parse(bytes);
    ShardOutcome outcome;
    std::string proto;
    if (!absl::Base64Unescape(json.at("task_result").get<std::string>(), &proto) ||
        !outcome.result.ParseFromString(proto)) {
      return absl::DataLossError("job shard outcome: task_result is not a TaskResult");
    }
    outcome.task_report = json.at("task_report");
    outcome.results_json = json.at("results_json").get<std::string>();
    outcome.results_csv = json.at("results_csv").get<std::string>();
    outcome.requests_total = json.at("requests_total").get<int64_t>();
    outcome.requests_cached = json.at("requests_cached").get<int64_t>();
    outcome.requests_computed = json.at("requests_computed").get<int64_t>();
    outcome.store_seconds = json.value("store_seconds", 0.0);
    outcome.prepare_seconds = json.value("prepare_seconds", 0.0);
    // Outcomes stored before range shards: whole tasks.
    const int kind = json.value("kind", static_cast<int>(ShardKind::kWholeTask));
    if (kind < 0 || kind > static_cast<int>(ShardKind::kReport)) {
      return absl::DataLossError("job shard outcome: unknown kind");
    }
    outcome.kind = static_cast<ShardKind>(kind);
    outcome.task_index = json.value("task_index", 0);
    return outcome;
  } catch (const nlohmann::json::exception& e) {
    return absl::DataLossError(absl::StrCat("job shard outcome: ", e.what()));
  }
}

}  // namespace hgeval::server
