// `hgeval run`'s results table: the evaluator's renderer (the one hgeval-eval prints), so
// perplexities get lm-eval's "↓" where the client's own copy printed "↑" for every metric.
#include "client/results_table.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hgeval::client {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(ResultsTableTest, ArrowsFollowHigherIsBetterFromTheResultsJson) {
  hgeval::v1::Job job;
  job.set_results_json(R"({
    "results": {"wikitext": {"alias": "wikitext", "word_perplexity,none": 41.5,
                             "word_perplexity_stderr,none": "N/A"},
                "piqa": {"alias": "piqa", "acc,none": 0.5, "acc_stderr,none": 0.02}},
    "versions": {"wikitext": 2, "piqa": 1},
    "n-shot": {"wikitext": 0, "piqa": 0},
    "higher_is_better": {"wikitext": {"word_perplexity": false}, "piqa": {"acc": true}}})");
  const std::string table = FormatResultsTable(job);
  EXPECT_THAT(table, HasSubstr("|word_perplexity|↓  |41.5000|±  |   N/A|"));
  EXPECT_THAT(table, HasSubstr("|acc            |↑  | 0.5000|±  |0.0200|"));
}

TEST(ResultsTableTest, AJobWithoutResultsJsonPrintsItsPerTaskMetrics) {
  hgeval::v1::Job job;
  hgeval::v1::TaskResult* task = job.add_results();
  task->set_task("arc_easy");
  task->set_version("1");
  (*task->mutable_metrics())["acc,none"] = 0.25;
  (*task->mutable_metrics())["acc_stderr,none"] = 0.01;
  const std::string table = FormatResultsTable(job);
  EXPECT_THAT(table, HasSubstr("arc_easy"));
  EXPECT_THAT(table, HasSubstr("0.2500"));
  EXPECT_THAT(table, HasSubstr("0.0100"));
  EXPECT_THAT(table, Not(HasSubstr("↑")));  // no higher_is_better known: no arrow
}

}  // namespace
}  // namespace hgeval::client
