// Malformed checkpoints: each case must give a clear absl::Status (expected code; message
// naming the file and, where there is one, the tensor), never a crash or an out-of-bounds
// read (the ASan build and the safetensors fuzzer cover the latter).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <future>
#include <limits>

#include "engine/loader/checkpoint.h"
#include "gtest/gtest.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

namespace fs = std::filesystem;

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string LengthPrefix(uint64_t n) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(n >> (8 * i));
  return out;
}

// A safetensors file from a literal header and a data section.
std::string Safetensors(const std::string& header, const std::string& data) {
  return LengthPrefix(header.size()) + header + data;
}

// A checkpoint folder with a valid config.json and the given model.safetensors bytes.
std::string Folder(const std::string& tag, const std::string& safetensors_bytes) {
  const std::string dir = testing::MakeTempDir(tag);
  WriteBytes(dir + "/config.json", R"({"model_type": "llama"})");
  WriteBytes(dir + "/model.safetensors", safetensors_bytes);
  return dir;
}

struct Expectation {
  absl::StatusCode code;
  std::vector<std::string> mentions;  // substrings the message must contain
};

void ExpectError(const absl::Status& status, const Expectation& expected) {
  EXPECT_EQ(status.code(), expected.code) << status;
  for (const std::string& text : expected.mentions) {
    EXPECT_NE(status.message().find(text), std::string::npos)
        << "message lacks '" << text << "': " << status.message();
  }
}

// Opening the folder must fail.
void ExpectOpenFails(const std::string& dir, const Expectation& expected) {
  auto checkpoint = OpenCheckpoint(dir);
  ASSERT_FALSE(checkpoint.ok()) << dir;
  ExpectError(checkpoint.status(), expected);
}

const std::string kEightBytes(8, '\x01');

// A FIFO as model.safetensors (issue 29, low list): opening it for reading used to wait
// for a writer forever (the load hung and SIGTERM could not end it). It is refused at once
// as not a regular file. If the open still blocked, the writer end below releases it.
TEST(CheckpointMalformedTest, AFifoIsRefusedWithoutWaiting) {
  const std::string dir = testing::MakeTempDir("fifo");
  WriteBytes(dir + "/config.json", R"({"model_type": "llama"})");
  const std::string fifo = dir + "/model.safetensors";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::future<absl::Status> opened =
      std::async(std::launch::async, [&] { return OpenCheckpoint(dir).status(); });
  const bool answered = opened.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  if (!answered) {
    const int writer = ::open(fifo.c_str(), O_WRONLY);  // lets the blocked open return
    ::close(writer);
  }
  const absl::Status status = opened.get();
  EXPECT_TRUE(answered) << "opening a FIFO blocked";
  ExpectError(status, {absl::StatusCode::kInvalidArgument, {"not a regular file"}});
}

TEST(CheckpointMalformedTest, FileShorterThanLengthPrefix) {
  const std::string dir = Folder("short", "abc");
  ExpectOpenFails(dir, {absl::StatusCode::kDataLoss, {dir + "/model.safetensors", "3 bytes"}});
  const std::string empty = Folder("empty", "");
  ExpectOpenFails(empty, {absl::StatusCode::kDataLoss, {empty + "/model.safetensors"}});
}

TEST(CheckpointMalformedTest, HeaderLengthPastEndOfFile) {
  const std::string dir = Folder("past", LengthPrefix(1000) + "{}");
  ExpectOpenFails(dir, {absl::StatusCode::kDataLoss,
                        {dir + "/model.safetensors", "header length 1000", "10 bytes"}});
}

TEST(CheckpointMalformedTest, AbsurdHeaderLength) {
  const std::string dir = Folder("absurd", LengthPrefix(uint64_t{1} << 62) + "{}");
  ExpectOpenFails(
      dir, {absl::StatusCode::kInvalidArgument, {dir + "/model.safetensors", "absurdly large"}});
}

TEST(CheckpointMalformedTest, HeaderNotJson) {
  const std::string dir = Folder("notjson", Safetensors("{\"w\": {\"dtype\": ", ""));
  ExpectOpenFails(
      dir, {absl::StatusCode::kInvalidArgument, {dir + "/model.safetensors", "not valid JSON"}});
  const std::string array = Folder("array", Safetensors("[1, 2]", ""));
  ExpectOpenFails(array, {absl::StatusCode::kInvalidArgument,
                          {array + "/model.safetensors", "not a JSON object"}});
  const std::string deep =
      Folder("deep", Safetensors(std::string(5000, '[') + std::string(5000, ']'), ""));
  ExpectOpenFails(deep, {absl::StatusCode::kInvalidArgument, {deep + "/model.safetensors"}});
}

TEST(CheckpointMalformedTest, EntryMissingFields) {
  const std::string dir =
      Folder("fields", Safetensors(R"({"w": {"dtype": "F32", "shape": [2]}})", kEightBytes));
  ExpectOpenFails(dir, {absl::StatusCode::kInvalidArgument,
                        {dir + "/model.safetensors", "'w'", "data_offsets"}});
  const std::string not_object = Folder("entry", Safetensors(R"({"w": 5})", ""));
  ExpectOpenFails(not_object, {absl::StatusCode::kInvalidArgument, {"'w'", "not an object"}});
}

TEST(CheckpointMalformedTest, UnknownDtype) {
  const std::string dir = Folder(
      "dtype", Safetensors(R"({"w": {"dtype": "F8_E4M3", "shape": [8], "data_offsets": [0, 8]}})",
                           kEightBytes));
  ExpectOpenFails(
      dir, {absl::StatusCode::kInvalidArgument, {dir + "/model.safetensors", "'w'", "F8_E4M3"}});
  // A megabyte-long dtype is quoted clipped, not whole.
  const std::string long_dtype =
      Folder("longdtype", Safetensors(R"({"w": {"dtype": ")" + std::string(1 << 20, 'X') +
                                          R"(", "shape": [8], "data_offsets": [0, 8]}})",
                                      kEightBytes));
  auto status = OpenCheckpoint(long_dtype).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("'w'"), std::string::npos);
  EXPECT_LT(status.message().size(), 1000u);
}

TEST(CheckpointMalformedTest, NegativeOrNonIntegerShape) {
  for (const std::string shape : {"[-2]", "[2.5]", "[\"2\"]", "3", "[18446744073709551615]"}) {
    SCOPED_TRACE(shape);
    const std::string dir = Folder("shape", Safetensors(R"({"w": {"dtype": "F32", "shape": )" +
                                                            shape + R"(, "data_offsets": [0, 8]}})",
                                                        kEightBytes));
    ExpectOpenFails(
        dir, {absl::StatusCode::kInvalidArgument, {dir + "/model.safetensors", "'w'", "shape"}});
  }
}

TEST(CheckpointMalformedTest, OffsetsOutsideDataSection) {
  const std::string dir = Folder(
      "range", Safetensors(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})",
                           kEightBytes));
  ExpectOpenFails(dir, {absl::StatusCode::kDataLoss,
                        {dir + "/model.safetensors", "'w'", "outside the data section"}});
  const std::string negative = Folder(
      "negoff", Safetensors(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [-8, 0]}})",
                            kEightBytes));
  ExpectOpenFails(negative, {absl::StatusCode::kInvalidArgument, {"'w'", "data_offsets"}});
}

TEST(CheckpointMalformedTest, OffsetsEndBeforeBegin) {
  const std::string dir = Folder(
      "reversed",
      Safetensors(R"({"w": {"dtype": "U8", "shape": [0], "data_offsets": [8, 0]}})", kEightBytes));
  ExpectOpenFails(dir, {absl::StatusCode::kInvalidArgument,
                        {dir + "/model.safetensors", "'w'", "end before they begin"}});
}

TEST(CheckpointMalformedTest, ByteSizeDisagreesWithShape) {
  const std::string dir = Folder(
      "bytes", Safetensors(R"({"w": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 8]}})",
                           kEightBytes));
  ExpectOpenFails(dir, {absl::StatusCode::kInvalidArgument,
                        {dir + "/model.safetensors", "'w'", "8 bytes", "[3]", "needs 6"}});
  // A shape whose byte size overflows 64 bits must not wrap around to a "match".
  const std::string overflow =
      Folder("overflow", Safetensors(R"({"w": {"dtype": "F32", "shape": [4611686018427387904, 4], )"
                                     R"("data_offsets": [0, 0]}})",
                                     ""));
  ExpectOpenFails(overflow, {absl::StatusCode::kInvalidArgument, {"'w'"}});
}

TEST(CheckpointMalformedTest, OverlappingTensors) {
  const std::string dir = Folder(
      "overlap", Safetensors(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                             R"( "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                             kEightBytes));
  ExpectOpenFails(dir, {absl::StatusCode::kInvalidArgument,
                        {dir + "/model.safetensors", "'a'", "'b'", "overlaps"}});
}

TEST(CheckpointMalformedTest, DuplicateTensorName) {
  const std::string dir =
      Folder("dup", Safetensors(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
                                R"( "w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                                kEightBytes));
  ExpectOpenFails(
      dir, {absl::StatusCode::kInvalidArgument, {dir + "/model.safetensors", "'w'", "twice"}});
}

TEST(CheckpointMalformedTest, TruncatedRealCheckpoint) {
  const std::string original =
      ReadBytes(testing::SourcePath("tests/golden/llama/model.safetensors"));
  ASSERT_GT(original.size(), 1000u);
  const std::string dir = Folder("trunc", original.substr(0, original.size() / 2));
  // The tensor stored last is the first one found to run past the end.
  ExpectOpenFails(
      dir, {absl::StatusCode::kDataLoss, {dir + "/model.safetensors", "tensor '", "truncated"}});
}

TEST(CheckpointMalformedTest, ShapeDisagreesWithConfig) {
  const std::string dir = testing::MakeTempDir("cfgshape");
  WriteBytes(dir + "/config.json", "{}");
  ASSERT_TRUE(WriteSafetensors(dir + "/model.safetensors",
                               {{"model.norm.weight", HostTensor{{3}, {1, 2, 3}}}}, DType::kF32)
                  .ok());
  auto checkpoint = OpenCheckpoint(dir);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  auto read = (*checkpoint)->ReadFloat("model.norm.weight", {4});
  ExpectError(read.status(), {absl::StatusCode::kInvalidArgument,
                              {dir + "/model.safetensors", "'model.norm.weight'", "[3]", "[4]"}});
}

TEST(CheckpointMalformedTest, DtypeDisagreesWithExpectation) {
  // An integer tensor where a float weight is expected.
  const std::string dir = Folder(
      "intweight",
      Safetensors(R"({"w": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]}})", kEightBytes));
  auto checkpoint = OpenCheckpoint(dir);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  EXPECT_EQ((*checkpoint)->Info("w")->dtype, DType::kI64);
  EXPECT_EQ((*checkpoint)->RawBytes("w")->size(), 8u);
  ExpectError((*checkpoint)->ReadFloat("w", {1}).status(),
              {absl::StatusCode::kInvalidArgument, {dir + "/model.safetensors", "'w'", "I64"}});
}

TEST(CheckpointMalformedTest, MissingTensor) {
  const std::string dir = testing::SourcePath("tests/golden/llama");
  auto checkpoint = OpenCheckpoint(dir);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  for (auto status : {(*checkpoint)->ReadFloat("model.layers.9.mlp.up_proj.weight", {}).status(),
                      (*checkpoint)->Info("model.layers.9.mlp.up_proj.weight").status(),
                      (*checkpoint)->RawBytes("model.layers.9.mlp.up_proj.weight").status()}) {
    ExpectError(status,
                {absl::StatusCode::kNotFound, {dir, "'model.layers.9.mlp.up_proj.weight'"}});
  }
}

TEST(CheckpointMalformedTest, NanAndInfWeights) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (float bad : {nan, inf, -inf}) {
      const std::string dir = testing::MakeTempDir("nonfinite");
      WriteBytes(dir + "/config.json", "{}");
      ASSERT_TRUE(WriteSafetensors(dir + "/model.safetensors",
                                   {{"ok", HostTensor{{2}, {1, 2}}},
                                    {"layer.weight", HostTensor{{2, 2}, {0.5f, 1, bad, 3}}}},
                                   dtype)
                      .ok());
      auto checkpoint = OpenCheckpoint(dir);
      ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
      EXPECT_TRUE((*checkpoint)->ReadFloat("ok", {2}).ok());
      ExpectError((*checkpoint)->ReadFloat("layer.weight", {2, 2}).status(),
                  {absl::StatusCode::kInvalidArgument,
                   {dir + "/model.safetensors", "'layer.weight'", "non-finite",
                    std::isnan(bad) ? "nan" : "inf", "index 2"}});
    }
  }
}

TEST(CheckpointMalformedTest, MissingShard) {
  const std::string dir = testing::MakeTempDir("noshard");
  WriteBytes(dir + "/config.json", "{}");
  ASSERT_TRUE(
      WriteSafetensors(dir + "/model-1.safetensors", {{"a", HostTensor{{1}, {1}}}}, DType::kF32)
          .ok());
  WriteBytes(dir + "/model.safetensors.index.json",
             R"({"weight_map": {"a": "model-1.safetensors", "b": "model-2.safetensors"}})");
  ExpectOpenFails(dir, {absl::StatusCode::kNotFound,
                        {dir + "/model.safetensors.index.json", "model-2.safetensors", "'b'"}});
  // Shard names must stay inside the folder.
  WriteBytes(dir + "/model.safetensors.index.json",
             R"({"weight_map": {"a": "../model-1.safetensors"}})");
  ExpectOpenFails(
      dir, {absl::StatusCode::kInvalidArgument, {dir + "/model.safetensors.index.json", "'a'"}});
  WriteBytes(dir + "/model.safetensors.index.json", R"({"metadata": {}})");
  ExpectOpenFails(dir, {absl::StatusCode::kInvalidArgument,
                        {dir + "/model.safetensors.index.json", "weight_map"}});
}

TEST(CheckpointMalformedTest, BadOrMissingConfigJson) {
  const std::string dir = Folder("badcfg", Safetensors("{}", ""));
  WriteBytes(dir + "/config.json", R"({"model_type": "llama",)");
  ExpectOpenFails(dir, {absl::StatusCode::kInvalidArgument, {dir + "/config.json", "JSON"}});
  WriteBytes(dir + "/config.json", R"(["llama"])");
  ExpectOpenFails(dir, {absl::StatusCode::kInvalidArgument, {dir + "/config.json", "object"}});
  fs::remove(dir + "/config.json");
  ExpectOpenFails(dir, {absl::StatusCode::kNotFound, {dir + "/config.json"}});
}

TEST(CheckpointMalformedTest, FolderWithoutWeights) {
  const std::string dir = testing::MakeTempDir("noweights");
  WriteBytes(dir + "/config.json", "{}");
  ExpectOpenFails(dir, {absl::StatusCode::kNotFound, {dir, "model.safetensors"}});
  ExpectOpenFails(dir + "/absent", {absl::StatusCode::kNotFound, {dir + "/absent"}});
}

TEST(CheckpointMalformedTest, TruncatedLlama2cFile) {
  const std::string original =
      ReadBytes(testing::SourcePath("data/models/stories260K/stories260K.bin"));
  const std::string path = testing::MakeTempDir("l2ctrunc") + "/stories260K.bin";
  WriteBytes(path, original.substr(0, original.size() - 1000));
  auto checkpoint = OpenLlama2cCheckpoint(path);
  ASSERT_FALSE(checkpoint.ok());
  ExpectError(checkpoint.status(), {absl::StatusCode::kDataLoss, {path, "1056540", "truncated"}});
  WriteBytes(path, original.substr(0, 20));
  ExpectError(OpenLlama2cCheckpoint(path).status(), {absl::StatusCode::kDataLoss, {path}});
}

}  // namespace
}  // namespace hgeval
