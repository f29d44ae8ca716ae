// PyTorch-format checkpoints (pytorch_model.bin, sharded or not) written by the real
// torch.save (tests/engine/testdata/torch_bin, made by scripts/fixtures/
// make_torch_bin_fixtures.py): the tensors equal the same weights' safetensors bit for bit,
// a TNL folder in that format gives the same logits, views over shared storages come out
// right, and malformed or unsupported files are refused by name.
#include "engine/loader/torch_checkpoint.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/loader/checkpoint.h"
#include "engine/loader/tensor_table.h"
#include "engine/loader/torch_pickle.h"
#include "engine/loader/zip_archive.h"
#include "engine/model/load_model.h"
#include "gtest/gtest.h"
#include "tests/engine/golden_model_check.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

namespace fs = std::filesystem;

std::string Fixture(const std::string& name) {
  return testing::SourcePath("tests/engine/testdata/torch_bin/" + name);
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A folder with the fixture's config.json and its float32 reference as model.safetensors.
std::string SafetensorsTwin() {
  const std::string dir = testing::MakeTempDir("torch_bin_twin");
  fs::copy_file(Fixture("tnl_bin/config.json"), dir + "/config.json");
  fs::copy_file(Fixture("tnl_bin/model.safetensors.reference"), dir + "/model.safetensors");
  return dir;
}

void ExpectSameTensors(const Checkpoint& a, const Checkpoint& b) {
  ASSERT_EQ(a.TensorNames(), b.TensorNames());
  for (const std::string& name : a.TensorNames()) {
    auto ta = a.ReadFloat(name, {});
    auto tb = b.ReadFloat(name, {});
    ASSERT_TRUE(ta.ok()) << ta.status();
    ASSERT_TRUE(tb.ok()) << tb.status();
    EXPECT_EQ(ta->shape, tb->shape) << name;
    ASSERT_EQ(ta->data.size(), tb->data.size()) << name;
    EXPECT_EQ(std::memcmp(ta->data.data(), tb->data.data(), ta->data.size() * sizeof(float)), 0)
        << name;
  }
}

TEST(TorchCheckpoint, SingleFileEqualsSafetensorsBitForBit) {
  auto bin = OpenCheckpoint(Fixture("tnl_bin"));
  ASSERT_TRUE(bin.ok()) << bin.status();
  auto st = OpenCheckpoint(SafetensorsTwin());
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ((*bin)->TensorNames().size(), 12u);
  ExpectSameTensors(**bin, **st);
}

TEST(TorchCheckpoint, ShardsEqualTheSingleFile) {
  auto sharded = OpenCheckpoint(Fixture("tnl_bin_sharded"));
  ASSERT_TRUE(sharded.ok()) << sharded.status();
  auto single = OpenCheckpoint(Fixture("tnl_bin"));
  ASSERT_TRUE(single.ok()) << single.status();
  ExpectSameTensors(**sharded, **single);
}

TEST(TorchCheckpoint, TnlFolderGivesTheSafetensorsLogits) {
  auto from_bin = LoadModel(Fixture("tnl_bin_sharded"), LoadOptions());
  ASSERT_TRUE(from_bin.ok()) << from_bin.status();
  auto from_st = LoadModel(SafetensorsTwin(), LoadOptions());
  ASSERT_TRUE(from_st.ok()) << from_st.status();
  EXPECT_EQ((*from_bin)->info().family, ModelFamily::kTnl);
  const std::vector<int32_t> ids = {5, 17, 3, 90, 42, 42, 7, 64, 1, 88};
  const std::vector<float> a = testing::AllLogits(**from_bin, ids);
  const std::vector<float> b = testing::AllLogits(**from_st, ids);
  ASSERT_EQ(a.size(), ids.size() * 96);
  EXPECT_EQ(a, b);
}

TEST(TorchCheckpoint, ViewsOverSharedStoragesAndDtypes) {
  const std::string dir = testing::MakeTempDir("torch_bin_views");
  WriteBytes(dir + "/config.json", "{\"model_type\": \"llama\"}");
  fs::copy_file(Fixture("views.bin"), dir + "/pytorch_model.bin");
  auto checkpoint = OpenCheckpoint(dir);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  auto read = [&](const std::string& name) {
    auto t = (*checkpoint)->ReadFloat(name, {});
    EXPECT_TRUE(t.ok()) << name << ": " << t.status();
    return t.ok() ? *t : HostTensor();
  };
  const HostTensor base = read("base");
  ASSERT_EQ(base.shape, (std::vector<int64_t>{4, 6}));
  for (int i = 0; i < 24; ++i) EXPECT_EQ(base.data[i], i);
  const HostTensor transposed = read("transposed");
  ASSERT_EQ(transposed.shape, (std::vector<int64_t>{6, 4}));
  for (int r = 0; r < 6; ++r) {
    for (int c = 0; c < 4; ++c) EXPECT_EQ(transposed.data[r * 4 + c], c * 6 + r);
  }
  const HostTensor rows = read("rows_1_3");
  ASSERT_EQ(rows.shape, (std::vector<int64_t>{2, 6}));
  for (int i = 0; i < 12; ++i) EXPECT_EQ(rows.data[i], 6 + i);
  const HostTensor column = read("column_2");
  EXPECT_EQ(column.data, (std::vector<float>{2, 8, 14, 20}));
  auto info = (*checkpoint)->Info("bf16");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->dtype, DType::kBF16);
  EXPECT_EQ(read("bf16").data, (std::vector<float>{-0.5f, -0.25f, 0.0f, 0.25f, 0.5f, 0.75f}));
  EXPECT_EQ((*checkpoint)->Info("fp16")->dtype, DType::kF16);
  EXPECT_EQ(read("fp16").data, (std::vector<float>{1, 1.125f, 1.25f, 1.375f, 1.5f, 1.625f}));
  const HostTensor scalar = read("scalar");
  EXPECT_TRUE(scalar.shape.empty());
  EXPECT_EQ(scalar.data, std::vector<float>{3.5f});
  EXPECT_EQ(read("empty").shape, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(read("parameter").data, std::vector<float>(4, -1.25f));
}

TEST(TorchCheckpoint, LegacyFormatIsRefusedWithAdvice) {
  const std::string dir = testing::MakeTempDir("torch_bin_legacy");
  WriteBytes(dir + "/config.json", "{\"model_type\": \"llama\"}");
  fs::copy_file(Fixture("legacy.bin"), dir + "/pytorch_model.bin");
  auto checkpoint = OpenCheckpoint(dir);
  ASSERT_FALSE(checkpoint.ok());
  EXPECT_EQ(checkpoint.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(checkpoint.status().message().find("safetensors"), std::string::npos);
}

TEST(TorchCheckpoint, TruncatedArchiveIsDataLoss) {
  const std::string bytes = ReadBytes(Fixture("tnl_bin/pytorch_model.bin"));
  const std::string dir = testing::MakeTempDir("torch_bin_truncated");
  fs::copy_file(Fixture("tnl_bin/config.json"), dir + "/config.json");
  // Cut inside the central directory: the end record is gone.
  WriteBytes(dir + "/pytorch_model.bin", bytes.substr(0, bytes.size() - 30));
  auto checkpoint = OpenCheckpoint(dir);
  ASSERT_FALSE(checkpoint.ok());
  EXPECT_NE(checkpoint.status().message().find("pytorch_model.bin"), std::string::npos);
  // Every prefix fails cleanly (no crash, no read past the end).
  for (size_t n : {size_t{0}, size_t{3}, size_t{100}, bytes.size() / 2, bytes.size() - 1}) {
    const std::string cut = bytes.substr(0, n);
    auto entries = ReadZipEntries(
        "cut", absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(cut.data()), cut.size()));
    EXPECT_FALSE(entries.ok()) << n;
  }
}

// Issue 29 item 11 (found by torch_checkpoint_fuzz): a zero-element tensor whose offset lies
// past its storage threw std::out_of_range ("pos > size()") out of the loader. It is empty
// and loads; a non-empty view at that offset is refused by name; nothing throws.
TEST(TorchCheckpoint, ViewOffsetPastItsStorageNeverThrows) {
  const std::string bytes = ReadBytes(Fixture("views.bin"));
  // "empty": BINPERSID, offset BININT1 0, shape (0, 3); its storage '4' holds 0 elements.
  const std::string empty_at_zero("QK\x00K\x00K\x03\x86", 8);
  const size_t at = bytes.find(empty_at_zero);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(bytes.find(empty_at_zero, at + 1), std::string::npos);
  auto load = [](const std::string& archive) {
    TensorTableCheckpoint table(nlohmann::json::object(), "{}", "patched");
    return ReadTorchCheckpoint(
        "patched.bin",
        absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(archive.data()), archive.size()),
        table);
  };
  std::string past = bytes;
  past[at + 2] = '\xc8';  // offset 200
  auto tensors = load(past);
  ASSERT_TRUE(tensors.ok()) << tensors.status();
  EXPECT_TRUE(tensors->at("empty").bytes.empty());
  EXPECT_EQ(tensors->at("empty").info.shape, (std::vector<int64_t>{0, 3}));
  // The same offset with shape (1, 3): reaches past the storage, refused by name.
  std::string nonempty = past;
  nonempty[at + 4] = '\x01';
  auto refused = load(nonempty);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("'empty'"), std::string::npos) << refused.status();
  EXPECT_NE(refused.status().message().find("past its storage"), std::string::npos);
}

// A strided view may not gather more elements than its storage holds (a stride-0 view
// could otherwise ask for terabytes from a tiny file): 25 elements of stride 0 over a
// 24-element storage are refused.
TEST(TorchCheckpoint, StridedViewLargerThanItsStorageIsRefused) {
  const std::string bytes = ReadBytes(Fixture("views.bin"));
  // "column_2": offset 2, shape (4,), stride (6,) over the 24-element storage '0'.
  const std::string column("QK\x02K\x04\x85q\x1eK\x06\x85", 11);
  const size_t at = bytes.find(column);
  ASSERT_NE(at, std::string::npos);
  std::string expanded = bytes;
  expanded[at + 4] = 25;
  expanded[at + 9] = 0;
  TensorTableCheckpoint table(nlohmann::json::object(), "{}", "expanded");
  auto tensors = ReadTorchCheckpoint(
      "expanded.bin",
      absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(expanded.data()), expanded.size()),
      table);
  ASSERT_FALSE(tensors.ok());
  EXPECT_NE(tensors.status().message().find("'column_2'"), std::string::npos) << tensors.status();
  EXPECT_NE(tensors.status().message().find("contiguous"), std::string::npos);
}

TEST(TorchPickle, RefusesCallablesOutsideAStateDict) {
  // protocol 2: GLOBAL os.system, ('echo',) REDUCE, STOP (sizeof: the literal holds NULs)
  static constexpr char kEvil[] =
      "\x80\x02"
      "cos\nsystem\n"
      "X\x04\x00\x00\x00"
      "echo"
      "\x85"
      "R.";
  const std::string pickle(kEvil, sizeof(kEvil) - 1);
  auto parsed = ParseTorchStateDictPickle(
      "evil.pkl",
      absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(pickle.data()), pickle.size()));
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(parsed.status().message().find("os.system"), std::string::npos) << parsed.status();
}

TEST(TorchPickle, EveryTruncationOfARealPickleFailsCleanly) {
  const std::string bytes = ReadBytes(Fixture("views.bin"));
  auto entries = ReadZipEntries(
      "views.bin",
      absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  ASSERT_TRUE(entries.ok()) << entries.status();
  absl::Span<const uint8_t> pickle;
  for (const auto& [name, entry] : *entries) {
    if (name.size() > 9 && name.substr(name.size() - 9) == "/data.pkl") pickle = entry.data;
  }
  ASSERT_FALSE(pickle.empty());
  auto whole = ParseTorchStateDictPickle("views", pickle);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->size(), 9u);
  for (size_t n = 0; n < pickle.size(); ++n) {
    EXPECT_FALSE(ParseTorchStateDictPickle("views", pickle.first(n)).ok()) << n;
  }
}

}  // namespace
}  // namespace hgeval
