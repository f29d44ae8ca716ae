// NIAH results JSON / CSV writers and the JSON reader used to draw heatmaps.
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "tasks/niah/output.h"
#include "tasks/niah/sweep.h"
#include "tests/support/paths.h"

namespace hgeval::niah {
namespace {

NiahResult TwoByTwoResult() {
  NiahResult r;
  r.options.mode = NiahMode::kStandard;
  r.options.grid = NiahGrid{{1000, 2000}, {0, 100}};
  r.options.model_name = "tiny";
  r.options.training_length = 1500;
  r.tokenizer_kind = "llama2c";
  const double scores[2][2] = {{10, 0}, {7.5, std::numeric_limits<double>::quiet_NaN()}};
  for (int l = 0; l < 2; ++l) {
    for (int d = 0; d < 2; ++d) {
      NiahCellResult c;
      c.layout.length = r.options.grid.lengths[l];
      c.layout.depth = r.options.grid.depths[d];
      c.ran = !std::isnan(scores[l][d]);
      c.score = scores[l][d];
      c.success = c.ran && c.score >= 5;
      c.generated = l == 0 && d == 1 ? "say \"hi\", then\nstop" : "eat a sandwich";
      r.cells.push_back(c);
    }
  }
  r.grid.lengths = {1000, 2000};
  r.grid.depths = {0, 100};
  r.grid.scores = {{10, 0}, {7.5, std::numeric_limits<double>::quiet_NaN()}};
  r.metrics = *metrics::ComputeNiahMetrics(r.grid);
  return r;
}

TEST(NiahOutputTest, CsvHasOneQuotedRowPerCellRun) {
  const std::string csv = NiahResultToCsv(TwoByTwoResult());
  std::istringstream in(csv);
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header,
            "length,depth,score,success,generated,rouge1_score,key_phrase_score,prompt_tokens,"
            "insertion_point");
  EXPECT_NE(csv.find("1000,0,10,1,\"eat a sandwich\","), std::string::npos);
  EXPECT_NE(csv.find("1000,100,0,0,\"say \"\"hi\"\", then\nstop\","), std::string::npos);
  EXPECT_NE(csv.find("2000,0,7.5,1,"), std::string::npos);
  EXPECT_EQ(csv.find("2000,100,"), std::string::npos);  // not run
}

TEST(NiahOutputTest, JsonRoundTripsTheGridForTheHeatmap) {
  const std::string dir = hgeval::testing::MakeTempDir("niah-out");
  ASSERT_TRUE(WriteNiahOutputs(TwoByTwoResult(), dir).ok());
  std::ifstream in(dir + "/" + kNiahResultsJson);
  std::stringstream text;
  text << in.rdbuf();
  auto input = ParseNiahResultsJson(text.str());
  ASSERT_TRUE(input.ok()) << input.status();
  EXPECT_EQ(input->model_name, "tiny");
  EXPECT_EQ(input->mode, "standard");
  EXPECT_EQ(input->training_length, 1500);
  EXPECT_EQ(input->grid.lengths, (std::vector<int64_t>{1000, 2000}));
  EXPECT_EQ(input->grid.scores[0], (std::vector<double>{10, 0}));
  EXPECT_EQ(input->grid.scores[1][0], 7.5);
  EXPECT_TRUE(std::isnan(input->grid.scores[1][1]));
  EXPECT_DOUBLE_EQ(input->metrics.average_accuracy, 0.5);
  EXPECT_TRUE(std::ifstream(dir + "/" + kNiahGridCsv).good());
  EXPECT_EQ(NiahHeatmapTitle("tiny", "standard"), "Needle In A HayStack - standard mode - tiny");
  EXPECT_FALSE(ParseNiahResultsJson("{not json").ok());
  EXPECT_FALSE(ParseNiahResultsJson("{}").ok());
}

}  // namespace
}  // namespace hgeval::niah
