// Model names resolve only inside configured roots.
#include "server/exec/model_registry.h"

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/paths.h"

namespace hgeval::server {
namespace {
namespace fs = std::filesystem;

TEST(ModelNameTest, Validation) {
  EXPECT_TRUE(IsValidModelName("stories260K"));
  EXPECT_TRUE(IsValidModelName("hgrn2-1.3b_v2"));
  for (const char* bad :
       {"", ".", "..", "../x", "a/b", "a\\b", "..hidden", ".x", "-x", "a b", "a..b", "/abs"}) {
    EXPECT_FALSE(IsValidModelName(bad)) << bad;
  }
}

class RegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = hgeval::testing::MakeTempDir("registry");
    root_ = dir_ + "/models";
    fs::create_directories(root_ + "/good");
    std::ofstream(root_ + "/good/model.bin") << "x";
    // A model outside the root, and a symlink inside the root pointing at it.
    fs::create_directories(dir_ + "/outside/secret");
    std::ofstream(dir_ + "/outside/secret/model.bin") << "x";
    fs::create_directory_symlink(dir_ + "/outside/secret", root_ + "/escape");
  }
  std::string dir_, root_;
};

TEST_F(RegistryTest, ListsOnlyModelsInsideTheRoot) {
  RegistryOptions options;
  options.roots = {root_};
  ModelRegistry registry(options);
  std::vector<std::string> names;
  for (const ModelSpec& s : registry.List()) names.push_back(s.name);
  EXPECT_THAT(names, ::testing::ElementsAre("good"));
}

TEST_F(RegistryTest, TraversalAndEscapesAreNotFound) {
  RegistryOptions options;
  options.roots = {root_};
  ModelRegistry registry(options);
  for (const char* name : {"../outside/secret", "escape", "..", "nope", "good/../../outside"}) {
    absl::StatusOr<LoadedModel*> m = registry.Get(name);
    EXPECT_EQ(m.status().code(), absl::StatusCode::kNotFound) << name;
    EXPECT_THAT(m.status().message(), ::testing::HasSubstr("unknown model")) << name;
  }
}

// A file-level symlink out of the root is not followed either (issue 29, low list: a
// model folder inside the root whose model.bin linked outside was loaded); a link that
// stays inside the root is fine.
TEST_F(RegistryTest, FileSymlinksOutOfTheRootAreNotFollowed) {
  fs::create_directories(root_ + "/linked");
  fs::create_symlink(dir_ + "/outside/secret/model.bin", root_ + "/linked/model.bin");
  fs::create_directories(root_ + "/shared");
  fs::create_symlink(root_ + "/good/model.bin", root_ + "/shared/model.bin");
  RegistryOptions options;
  options.roots = {root_};
  ModelRegistry registry(options);
  absl::StatusOr<LoadedModel*> linked = registry.Get("linked");
  ASSERT_FALSE(linked.ok());
  EXPECT_EQ(linked.status().code(), absl::StatusCode::kFailedPrecondition) << linked.status();
  EXPECT_THAT(linked.status().message(), ::testing::HasSubstr("linked/model.bin"));
  EXPECT_THAT(linked.status().message(), ::testing::HasSubstr("not followed"));
  // The inside link resolves (its "x" bytes then fail to load as a model, for another reason).
  EXPECT_THAT(registry.Get("shared").status().message(),
              ::testing::Not(::testing::HasSubstr("not followed")));
  std::vector<std::string> names;
  for (const ModelSpec& s : registry.List()) names.push_back(s.name);
  EXPECT_THAT(names, ::testing::ElementsAre("good", "shared"));
}

TEST_F(RegistryTest, ConfigFileResolvesRelativePaths) {
  const std::string config = dir_ + "/config.json";
  std::ofstream(config) << R"({"models": [{"name": "a", "path": "models/good",
      "tokenizer": "tok.bin"}], "roots": ["models"]})";
  RegistryOptions options;
  ASSERT_TRUE(ParseRegistryConfig(config, options).ok());
  ASSERT_EQ(options.models.size(), 1u);
  EXPECT_EQ(options.models[0].path, fs::path(dir_ + "/models/good").lexically_normal().string());
  EXPECT_EQ(options.models[0].tokenizer, fs::path(dir_ + "/tok.bin").lexically_normal().string());
  ASSERT_EQ(options.roots.size(), 1u);

  std::ofstream(config) << R"({"models": [{"name": "../bad", "path": "x"}]})";
  RegistryOptions bad;
  EXPECT_EQ(ParseRegistryConfig(config, bad).code(), absl::StatusCode::kInvalidArgument);
  std::ofstream(config) << "{not json";
  EXPECT_EQ(ParseRegistryConfig(config, bad).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hgeval::server

namespace hgeval::server {
namespace {

// A root holding a copy of the golden LLaMA (max_position_embeddings 1024) as "llama".
std::string GoldenLlamaRoot() {
  const std::string root = hgeval::testing::MakeTempDir("registry-llama") + "/models";
  fs::create_directories(root);
  fs::copy(hgeval::testing::SourcePath("tests/golden/llama"), root + "/llama",
           fs::copy_options::recursive);
  return root;
}

const std::string kTokenizer = "data/models/stories260K/tok512.bin";

TEST(RegistryLoadTest, RootModelsTakeTheServerWideLoadSettings) {
  RegistryOptions options;
  options.roots = {GoldenLlamaRoot()};
  options.default_tokenizer = hgeval::testing::SourcePath(kTokenizer);
  options.root_model_defaults.max_context = 3000;
  ModelRegistry registry(options);
  absl::StatusOr<LoadedModel*> model = registry.Get("llama");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->spec.max_context, 3000);
  EXPECT_EQ((*model)->info.max_context, 3000);
  EXPECT_EQ((*model)->max_sequence_tokens, 3000);
  // lm-eval's max_length stays the training length.
  EXPECT_EQ(LmEvalMaxLength(**model, 0), 1024);
  registry.StopSchedulers();
}

// A model folder's own tokenizer.json that is corrupt fails the load, naming the file
// (issue 29 item 10: it used to load silently with the server's --tokenizer instead, whose
// vocabulary need not be the model's). A folder without a tokenizer still takes it.
TEST(RegistryLoadTest, ACorruptTokenizerJsonIsAnErrorNotAFallback) {
  const std::string root = GoldenLlamaRoot();
  std::ofstream(root + "/llama/tokenizer.json") << "{\"model\": {\"type\": \"BPE\", \"vocab\": [";
  RegistryOptions options;
  options.roots = {root};
  options.default_tokenizer = hgeval::testing::SourcePath(kTokenizer);
  ModelRegistry registry(options);
  absl::StatusOr<LoadedModel*> model = registry.Get("llama");
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(std::string(model.status().message()), ::testing::HasSubstr("tokenizer.json"));
  EXPECT_THAT(std::string(model.status().message()),
              ::testing::Not(::testing::HasSubstr("tok512.bin")));
  fs::remove(root + "/llama/tokenizer.json");
  ModelRegistry without(options);
  absl::StatusOr<LoadedModel*> fallback = without.Get("llama");
  ASSERT_TRUE(fallback.ok()) << fallback.status();
  without.StopSchedulers();
}

TEST(RegistryLoadTest, ConfigMaxContextLetsALlamaRunPastItsTrainingLength) {
  const std::string dir = hgeval::testing::MakeTempDir("registry-config");
  std::ofstream(dir + "/models.json") << R"({"models": [
      {"name": "plain", "path": ")" << hgeval::testing::SourcePath("tests/golden/llama")
                                      << R"("},
      {"name": "long", "path": ")" << hgeval::testing::SourcePath("tests/golden/llama")
                                      << R"(", "max_context": 2048}]})";
  RegistryOptions options;
  ASSERT_TRUE(ParseRegistryConfig(dir + "/models.json", options).ok());
  options.default_tokenizer = hgeval::testing::SourcePath(kTokenizer);
  ModelRegistry registry(options);
  absl::StatusOr<LoadedModel*> plain = registry.Get("plain");
  absl::StatusOr<LoadedModel*> extended = registry.Get("long");
  ASSERT_TRUE(plain.ok() && extended.ok());
  EXPECT_EQ((*plain)->max_sequence_tokens, 1024);
  EXPECT_EQ((*extended)->max_sequence_tokens, 2048);
  registry.StopSchedulers();

  std::ofstream(dir + "/bad.json")
      << R"({"models": [{"name": "x", "path": "x", "max_context": -1}]})";
  RegistryOptions bad;
  const absl::Status status = ParseRegistryConfig(dir + "/bad.json", bad);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("max_context"));
}

}  // namespace
}  // namespace hgeval::server
