// The NIAH options are defined once (tasks/niah/niah_flags) and cross the wire through one
// pair of mappings: client::NiahSpecFromOptions and server::NiahOptionsFromSpec. A sweep
// asked for with the flags reaches the server as the same sweep, every option in the
// same sense (the proto's negative booleans included).
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "client/niah_spec.h"
#include "engine/cli/command_line.h"
#include "gtest/gtest.h"
#include "server/jobs/job_runner.h"
#include "tasks/niah/niah_flags.h"

ABSL_DECLARE_FLAG(std::string, mode);
ABSL_DECLARE_FLAG(std::string, lengths);
ABSL_DECLARE_FLAG(std::string, depths);
ABSL_DECLARE_FLAG(std::string, scorer);
ABSL_DECLARE_FLAG(bool, stemmer);
ABSL_DECLARE_FLAG(bool, prefix_reuse);
ABSL_DECLARE_FLAG(int, max_batch);
ABSL_DECLARE_FLAG(int64_t, training_length);
ABSL_DECLARE_FLAG(int, max_tokens);
ABSL_DECLARE_FLAG(hgeval::cli::OptionalEscapedList, until);
ABSL_DECLARE_FLAG(bool, ignore_eos);

namespace hgeval {
namespace {

void ExpectSameSweep(const niah::NiahOptions& a, const niah::NiahOptions& b) {
  EXPECT_EQ(a.mode, b.mode);
  EXPECT_EQ(a.grid.lengths, b.grid.lengths);
  EXPECT_EQ(a.grid.depths, b.grid.depths);
  EXPECT_EQ(a.buffer_tokens, b.buffer_tokens);
  EXPECT_EQ(a.max_new_tokens, b.max_new_tokens);
  EXPECT_EQ(a.stop_strings, b.stop_strings);
  EXPECT_EQ(a.ignore_eos, b.ignore_eos);
  EXPECT_EQ(a.scorer, b.scorer);
  EXPECT_EQ(a.rouge_use_stemmer, b.rouge_use_stemmer);
  EXPECT_EQ(a.metric_options.threshold, b.metric_options.threshold);
  EXPECT_EQ(a.metric_options.depth_alpha, b.metric_options.depth_alpha);
  EXPECT_EQ(a.metric_options.length_alpha, b.metric_options.length_alpha);
  EXPECT_EQ(a.prefix_reuse, b.prefix_reuse);
  EXPECT_EQ(a.max_batch, b.max_batch);
  EXPECT_EQ(a.max_cells, b.max_cells);
}

TEST(NiahSpecRoundTripTest, DefaultFlagsAreHgevalNiahsDefaultsOnBothSides) {
  absl::FlagSaver saver;
  absl::StatusOr<niah::NiahOptions> from_flags = niah::NiahOptionsFromFlags();
  ASSERT_TRUE(from_flags.ok()) << from_flags.status();
  ExpectSameSweep(*from_flags, niah::NiahOptions{.grid = from_flags->grid});
  const v1::NiahJobSpec spec =
      client::NiahSpecFromOptions(*from_flags, niah::TrainingLengthFromFlags());
  EXPECT_FALSE(spec.has_training_length());
  absl::StatusOr<niah::NiahOptions> on_server = server::NiahOptionsFromSpec(spec);
  ASSERT_TRUE(on_server.ok()) << on_server.status();
  ExpectSameSweep(*from_flags, *on_server);
  EXPECT_EQ(on_server->stop_strings, std::vector<std::string>{"\n"});
  EXPECT_FALSE(on_server->ignore_eos);
}

TEST(NiahSpecRoundTripTest, EveryOptionKeepsItsSenseAcrossTheWire) {
  absl::FlagSaver saver;
  absl::SetFlag(&FLAGS_mode, "standard");
  absl::SetFlag(&FLAGS_lengths, "600,300");
  absl::SetFlag(&FLAGS_depths, "0,50,100");
  absl::SetFlag(&FLAGS_scorer, "keyphrase");
  absl::SetFlag(&FLAGS_stemmer, false);
  absl::SetFlag(&FLAGS_prefix_reuse, false);
  absl::SetFlag(&FLAGS_max_batch, 4);
  absl::SetFlag(&FLAGS_training_length, 512);
  absl::SetFlag(&FLAGS_max_tokens, 8);
  absl::SetFlag(&FLAGS_until, cli::OptionalEscapedList{.given = true});  // `--until=`: none
  absl::SetFlag(&FLAGS_ignore_eos, true);
  absl::StatusOr<niah::NiahOptions> from_flags = niah::NiahOptionsFromFlags();
  ASSERT_TRUE(from_flags.ok()) << from_flags.status();
  EXPECT_EQ(from_flags->grid.lengths, (std::vector<int64_t>{300, 600}));
  EXPECT_EQ(from_flags->max_new_tokens, 8);
  EXPECT_TRUE(from_flags->stop_strings.empty());
  EXPECT_TRUE(from_flags->ignore_eos);
  EXPECT_FALSE(from_flags->rouge_use_stemmer);
  EXPECT_FALSE(from_flags->prefix_reuse);

  const v1::NiahJobSpec spec =
      client::NiahSpecFromOptions(*from_flags, niah::TrainingLengthFromFlags());
  EXPECT_TRUE(spec.ignore_eos());
  EXPECT_TRUE(spec.no_stemmer());
  EXPECT_TRUE(spec.no_prefix_reuse());
  EXPECT_TRUE(spec.no_stop_strings());
  EXPECT_EQ(spec.training_length(), 512);
  absl::StatusOr<niah::NiahOptions> on_server = server::NiahOptionsFromSpec(spec);
  ASSERT_TRUE(on_server.ok()) << on_server.status();
  ExpectSameSweep(*from_flags, *on_server);
}

TEST(NiahSpecRoundTripTest, StopStringsWithEscapesArriveAsText) {
  absl::FlagSaver saver;
  std::string error;
  cli::OptionalEscapedList until;
  ASSERT_TRUE(cli::AbslParseFlag("\\n\\n,Answer\\x2c", &until, &error)) << error;
  absl::SetFlag(&FLAGS_until, until);
  absl::StatusOr<niah::NiahOptions> from_flags = niah::NiahOptionsFromFlags();
  ASSERT_TRUE(from_flags.ok()) << from_flags.status();
  EXPECT_EQ(from_flags->stop_strings, (std::vector<std::string>{"\n\n", "Answer,"}));
  absl::StatusOr<niah::NiahOptions> on_server =
      server::NiahOptionsFromSpec(client::NiahSpecFromOptions(*from_flags, std::nullopt));
  ASSERT_TRUE(on_server.ok()) << on_server.status();
  EXPECT_EQ(on_server->stop_strings, from_flags->stop_strings);
}

}  // namespace
}  // namespace hgeval
