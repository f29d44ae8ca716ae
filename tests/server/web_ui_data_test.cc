// The web UI's data (server/http/web/web_ui_data.h): job rows with their ETA, lm-eval's table
// rows and CSV, pages of samples with their filters and bounds, the NIAH grid.
#include "server/http/web/web_ui_data.h"

#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace hgeval::server::web {
namespace {

using Json = nlohmann::json;

Json SomeResults() {
  return Json::parse(R"({
    "results": {
      "piqa": {"alias": "piqa", "acc,none": 0.625, "acc_stderr,none": 0.0125,
               "acc_norm,none": 0.5, "acc_norm_stderr,none": "N/A"},
      "wikitext": {"alias": "wikitext", "word_perplexity,none": 123.5}
    },
    "versions": {"piqa": 1, "wikitext": 2},
    "n-shot": {"piqa": 0, "wikitext": 0},
    "higher_is_better": {"piqa": {"acc": true, "acc_norm": true},
                         "wikitext": {"word_perplexity": false}}
  })");
}

Json ResultsWithSamples(int n) {
  Json results = SomeResults();
  Json records = Json::array();
  for (int i = 0; i < n; ++i) {
    records.push_back({{"doc_id", i},
                       {"doc", {{"goal", "goal number " + std::to_string(i)}}},
                       {"acc", i % 3 == 0 ? 1.0 : 0.0}});
  }
  results["samples"] = {{"piqa", records}};
  return results;
}

TEST(WebUiDataTest, RunningJobHasAnEtaFromItsPace) {
  hgeval::v1::Job job;
  job.set_id("job-1");
  job.set_state(hgeval::v1::JOB_STATE_RUNNING);
  job.set_created_at(1000);
  job.set_requests_total(100);
  job.set_requests_done(25);
  job.add_tasks("piqa");
  const Json row = JobSummaryJson(job, 1100);
  EXPECT_EQ(row["state"], "running");
  EXPECT_EQ(row["kind"], "lm_eval");
  EXPECT_EQ(row["elapsed_seconds"], 100);
  EXPECT_DOUBLE_EQ(row["eta_seconds"].get<double>(), 300.0);  // 75 left at 4 s a request
  // Requests found in the store say nothing of the pace (the progress bar's rule).
  job.set_requests_cached(5);
  EXPECT_DOUBLE_EQ(JobSummaryJson(job, 1100)["eta_seconds"].get<double>(), 375.0);
  job.set_state(hgeval::v1::JOB_STATE_SUCCEEDED);
  EXPECT_TRUE(JobSummaryJson(job, 1100)["eta_seconds"].is_null());
  job.set_state(hgeval::v1::JOB_STATE_RUNNING);
  job.set_requests_done(0);
  EXPECT_TRUE(JobSummaryJson(job, 1100)["eta_seconds"].is_null());  // no pace yet
}

TEST(WebUiDataTest, TableRowsCarryLmEvalsTextsAndTheNumbers) {
  const Json table = ResultsTableJson(SomeResults());
  ASSERT_EQ(table["results"].size(), 3u);
  const Json& first = table["results"][0];
  EXPECT_EQ(first["task"], "piqa");
  EXPECT_EQ(first["name"], "piqa");
  EXPECT_EQ(first["metric"], "acc");
  EXPECT_EQ(first["arrow"], "↑");
  EXPECT_EQ(first["value_text"], "0.6250");
  EXPECT_DOUBLE_EQ(first["value"].get<double>(), 0.625);
  EXPECT_DOUBLE_EQ(first["stderr"].get<double>(), 0.0125);
  const Json& second = table["results"][1];
  EXPECT_EQ(second["name"], "");  // a task's later rows print no name, as make_table
  EXPECT_EQ(second["stderr_text"], "   N/A");
  EXPECT_TRUE(second["stderr"].is_null());
  EXPECT_EQ(table["results"][2]["arrow"], "↓");
  EXPECT_EQ(table["results"][2]["pm"], "");
  EXPECT_TRUE(table["groups"].empty());
}

TEST(WebUiDataTest, CsvHoldsFullPrecisionNumbers) {
  EXPECT_EQ(ResultsTableCsv(SomeResults()),
            "table,task,filter,n-shot,metric,value,stderr\n"
            "results,piqa,none,0,acc,0.625,0.012500000000000001\n"
            "results,piqa,none,0,acc_norm,0.5,\n"
            "results,wikitext,none,0,word_perplexity,123.5,\n");
}

TEST(WebUiDataTest, SamplesArePagedAndThePageSizeIsBounded) {
  const Json results = ResultsWithSamples(250);
  SamplesQuery query;
  query.task = "piqa";
  query.page = 2;
  query.page_size = 100;
  Json page = SamplesPageJson(results, query);
  EXPECT_EQ(page["total"], 250);
  EXPECT_EQ(page["matched"], 250);
  ASSERT_EQ(page["samples"].size(), 50u);
  EXPECT_EQ(page["samples"][0]["doc_id"], 200);
  query.page = 0;
  query.page_size = 100000;
  page = SamplesPageJson(results, query);
  EXPECT_EQ(page["page_size"], kMaxSamplesPageSize);
  EXPECT_EQ(page["samples"].size(), static_cast<size_t>(kMaxSamplesPageSize));
}

TEST(WebUiDataTest, SamplesFilterOnTextAndOnAMetricsValue) {
  const Json results = ResultsWithSamples(30);
  SamplesQuery query;
  query.contains = "goal number 17\"";  // the record's JSON text: the quote ends the string
  Json page = SamplesPageJson(results, query);
  EXPECT_EQ(page["task"], "piqa");  // the first task when none is named
  ASSERT_EQ(page["matched"], 1);
  EXPECT_EQ(page["samples"][0]["doc_id"], 17);
  query.contains.clear();
  query.metric = "acc";
  query.metric_value = "1";
  page = SamplesPageJson(results, query);
  EXPECT_EQ(page["matched"], 10);
  for (const Json& sample : page["samples"]) EXPECT_EQ(sample["doc_id"].get<int>() % 3, 0);
}

TEST(WebUiDataTest, LongSampleTextsAreCutAndSaySo) {
  Json results = SomeResults();
  results["samples"] = {
      {"piqa", Json::array({{{"doc_id", 0}, {"doc", std::string(100000, 'x')}}})}};
  const Json page = SamplesPageJson(results, SamplesQuery{});
  ASSERT_EQ(page["samples"].size(), 1u);
  EXPECT_TRUE(page["samples"][0]["_cut"].get<bool>());
  const std::string doc = page["samples"][0]["doc"];
  EXPECT_LT(doc.size(), static_cast<size_t>(kMaxSampleTextBytes + 64));
  EXPECT_NE(doc.find("more bytes]"), std::string::npos);
}

TEST(WebUiDataTest, AJobWithoutSamplesOrAnUnknownTaskIsAnError) {
  EXPECT_TRUE(SamplesPageJson(SomeResults(), SamplesQuery{}).contains("error"));
  SamplesQuery query;
  query.task = "arc_easy";
  const Json page = SamplesPageJson(ResultsWithSamples(3), query);
  EXPECT_TRUE(page.contains("error"));
  EXPECT_EQ(page["tasks"], Json::array({"piqa"}));
}

TEST(WebUiDataTest, NiahGridKeepsCellsNotRunAsNull) {
  const Json niah = Json::parse(R"({
    "model": "m", "mode": "easy", "training_length": 0,
    "grid": {"lengths": [100, 200], "depths": [0, 50], "scores": [[10, 0], [5, null]]},
    "metrics": {"threshold": 5, "depth_alpha": 1.01, "length_alpha": 1.01,
                "weighted_average_accuracy": 0.5},
    "cells": [{"length": 100, "depth": 0, "ran": true, "score": 10, "generated": "x"}]
  })");
  const Json grid = NiahGridJson(niah);
  ASSERT_FALSE(grid.contains("error")) << grid.dump();
  EXPECT_EQ(grid["title"], "Needle In A HayStack - easy mode - m");
  EXPECT_EQ(grid["lengths"], Json::array({100, 200}));
  EXPECT_EQ(grid["scores"][1][0], 5.0);
  EXPECT_TRUE(grid["scores"][1][1].is_null());
  EXPECT_EQ(grid["cells"].size(), 1u);
  EXPECT_EQ(grid["metrics"]["weighted_average_accuracy"], 0.5);
  EXPECT_TRUE(NiahGridJson(Json::object()).contains("error"));
}

}  // namespace
}  // namespace hgeval::server::web
