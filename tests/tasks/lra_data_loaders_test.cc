// The LRA loaders on small files in the official formats (tests/tasks/lra_data, written by
// its make_fixtures.py with an independent PNG encoder), and their errors on malformed
// files.
#include <png.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tasks/lra/cifar10.h"
#include "tasks/lra/listops_data.h"
#include "tasks/lra/pathfinder.h"
#include "tasks/lra/text_data.h"
#include "tests/support/paths.h"

namespace hgeval::tasks::lra {
namespace {

std::string Fixture(const std::string& relative) {
  return testing::SourcePath("tests/tasks/lra_data/lra/" + relative);
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(ListOpsTsvTest, ReadsTheReleaseFormat) {
  auto examples = ReadListOpsTsv(Fixture("listops/basic_test.tsv"));
  ASSERT_TRUE(examples.ok()) << examples.status();
  ASSERT_EQ(examples->size(), 3u);
  EXPECT_EQ((*examples)[0].source, "( ( ( [MAX 2 ) 9 ) ] )");
  EXPECT_EQ((*examples)[0].label, 9);
  EXPECT_EQ((*examples)[2].label, 5);
}

TEST(ListOpsTsvTest, ColumnsMayComeInEitherOrder) {
  auto examples = ParseListOpsTsv("Target\tSource\n4\t( [SM 4 ] )\n", "t.tsv");
  ASSERT_TRUE(examples.ok()) << examples.status();
  EXPECT_EQ((*examples)[0].source, "( [SM 4 ] )");
  EXPECT_EQ((*examples)[0].label, 4);
  // Round trip through the writer.
  auto again = ParseListOpsTsv(ListOpsTsv(*examples), "again.tsv");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)[0].source, (*examples)[0].source);
}

TEST(ListOpsTsvTest, MalformedFilesNameTheLine) {
  auto no_header = ParseListOpsTsv("( [MAX 1 ] )\t1\n", "a.tsv");
  EXPECT_EQ(no_header.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(no_header.status().message().find("Source and Target"), std::string::npos);
  auto bad_label = ParseListOpsTsv("Source\tTarget\n( [MAX 1 ] )\t1\n( [MAX 1 ] )\t12\n", "b.tsv");
  EXPECT_EQ(bad_label.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad_label.status().message().find("b.tsv: line 3"), std::string::npos);
  auto missing_field = ParseListOpsTsv("Source\tTarget\n( [MAX 1 ] )\n", "c.tsv");
  EXPECT_NE(missing_field.status().message().find("expected 2 tab-separated fields"),
            std::string::npos);
  EXPECT_EQ(ReadListOpsTsv("/nonexistent/basic_test.tsv").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(ImdbJsonlTest, ReadsTextAndLabel) {
  auto examples = ReadImdbJsonl(Fixture("imdb/test.jsonl"));
  ASSERT_TRUE(examples.ok()) << examples.status();
  ASSERT_EQ(examples->size(), 2u);
  EXPECT_EQ((*examples)[0].label, 1);
  EXPECT_EQ((*examples)[1].text, "Dull, caf\xc3\xa9 scenes.");
}

TEST(ImdbJsonlTest, MalformedRecords) {
  auto bad_label = ParseImdbJsonl("{\"text\": \"x\", \"label\": 2}\n", "i.jsonl");
  EXPECT_NE(bad_label.status().message().find("record 1"), std::string::npos);
  auto no_text = ParseImdbJsonl("{\"label\": 1}\n", "i.jsonl");
  EXPECT_NE(no_text.status().message().find("'text'"), std::string::npos);
  EXPECT_FALSE(ParseImdbJsonl("{not json\n", "i.jsonl").ok());
}

TEST(AanTsvTest, ReadsPairsWithFloatOrIntLabels) {
  auto pairs = ReadAanTsv(Fixture("aan/new_aan_pairs.test.tsv"));
  ASSERT_TRUE(pairs.ok()) << pairs.status();
  ASSERT_EQ(pairs->size(), 2u);
  EXPECT_EQ((*pairs)[0].label, 1);
  EXPECT_EQ((*pairs)[0].id2, "W02-2002");
  EXPECT_EQ((*pairs)[0].text1, "We parse trees.");
  EXPECT_EQ((*pairs)[1].label, 0);
  EXPECT_EQ((*pairs)[1].text2, "Vision.");
}

TEST(AanTsvTest, MalformedLines) {
  auto four = ParseAanTsv("1\ta\tb\ttext\n", "p.tsv");
  EXPECT_NE(four.status().message().find("expected 5 tab-separated fields"), std::string::npos);
  auto label = ParseAanTsv("0.5\ta\tb\tx\ty\n", "p.tsv");
  EXPECT_NE(label.status().message().find("label must be 0 or 1"), std::string::npos);
}

TEST(Cifar10Test, ReadsRecordsAsInterleavedPixels) {
  auto images = ReadCifar10Batch(Fixture("cifar10/test_batch.bin"));
  ASSERT_TRUE(images.ok()) << images.status();
  ASSERT_EQ(images->size(), 2u);
  const Image& first = (*images)[0];
  EXPECT_EQ(first.label, 3);
  EXPECT_EQ(first.height, 32);
  EXPECT_EQ(first.channels, 3);
  // Planes were written as (base + p) % 256 for base R 255, G 0, B 0.
  EXPECT_EQ(first.pixels[0], 255);
  EXPECT_EQ(first.pixels[1], 0);
  EXPECT_EQ(first.pixels[3 * 5 + 0], 4);  // (255 + 5) % 256
  EXPECT_EQ(first.pixels[3 * 5 + 2], 5);
  EXPECT_EQ((*images)[1].label, 7);
  EXPECT_EQ((*images)[1].pixels[3 * 1023 + 1], (20 + 1023) % 256);
}

TEST(Cifar10Test, GrayscaleAsTensorFlowConvertsIt) {
  Image rgb{1, 2, 3, {255, 0, 0, 10, 20, 30}, 0};
  Image gray = CifarToGrayscale(rgb);
  ASSERT_EQ(gray.channels, 1);
  EXPECT_EQ(gray.pixels[0], 76);  // trunc(0.2989 * 255.5) = trunc(76.37)
  // (0.2989*10 + 0.5870*20 + 0.1140*30) / 255 * 255.5 = 18.16
  EXPECT_EQ(gray.pixels[1], 18);
}

TEST(Cifar10Test, TruncatedBatchAndBadLabel) {
  std::string record(kCifarRecordBytes, '\0');
  auto truncated = ParseCifar10Batch(record.substr(0, 3000), "b.bin");
  EXPECT_EQ(truncated.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(truncated.status().message().find("whole number of CIFAR-10 records"),
            std::string::npos);
  record[0] = 10;
  auto label = ParseCifar10Batch(record, "b.bin");
  EXPECT_NE(label.status().message().find("label 10 is above 9"), std::string::npos);
}

TEST(PathfinderTest, IndexSortsMetadataFilesByNumber) {
  auto entries = ReadPathfinderIndex(Fixture("pathfinder32/curv_contour_length_14"));
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 10u);
  // 2.npy (samples 0-4) before 10.npy (samples 5-9).
  EXPECT_EQ((*entries)[0].image, "imgs/0/sample_0.png");
  EXPECT_EQ((*entries)[9].image, "imgs/0/sample_9.png");
  EXPECT_EQ((*entries)[3].label, 1);
}

TEST(PathfinderTest, ReadsEightBitGrayPng) {
  auto image = ReadGrayPng(Fixture("pathfinder32/curv_contour_length_14/imgs/0/sample_2.png"));
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->height, 32);
  EXPECT_EQ(image->width, 32);
  EXPECT_EQ(image->channels, 1);
  // Written as (17 i + 3 y + x) % 256 with i = 2.
  EXPECT_EQ(image->pixels[0], 34);
  EXPECT_EQ(image->pixels[5 * 32 + 7], 34 + 15 + 7);
}

TEST(PathfinderTest, WriterRoundTrips) {
  const std::string path = testing::MakeTempDir("lra_png") + "/x.png";
  Image image{2, 3, 1, {0, 1, 2, 253, 254, 255}, 0};
  ASSERT_TRUE(WriteGrayPng(path, image).ok());
  auto back = ReadGrayPng(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->pixels, image.pixels);
}

TEST(PathfinderTest, MalformedFiles) {
  const std::string dir = testing::MakeTempDir("lra_bad_png");
  WriteFile(dir + "/text.png", "not a png at all");
  auto not_png = ReadGrayPng(dir + "/text.png");
  EXPECT_EQ(not_png.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(not_png.status().message().find("text.png"), std::string::npos);
  // A real PNG cut in half: the header reads, the pixel data does not.
  std::ifstream in(Fixture("pathfinder32/curv_contour_length_14/imgs/0/sample_0.png"),
                   std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  WriteFile(dir + "/cut.png", bytes.substr(0, bytes.size() / 2));
  EXPECT_EQ(ReadGrayPng(dir + "/cut.png").status().code(), absl::StatusCode::kInvalidArgument);
  // Colour is not Pathfinder's format.
  png_image rgb{};
  rgb.version = PNG_IMAGE_VERSION;
  rgb.width = 2;
  rgb.height = 1;
  rgb.format = PNG_FORMAT_RGB;
  const uint8_t pixels[6] = {1, 2, 3, 4, 5, 6};
  ASSERT_TRUE(png_image_write_to_file(&rgb, (dir + "/rgb.png").c_str(), 0, pixels, 0, nullptr));
  auto colour = ReadGrayPng(dir + "/rgb.png");
  EXPECT_NE(colour.status().message().find("8-bit grayscale"), std::string::npos);
  EXPECT_EQ(ReadGrayPng(dir + "/missing.png").status().code(), absl::StatusCode::kNotFound);
  auto short_line = ParsePathfinderMetadata("imgs/0 sample_0.png 0\n", "m.npy");
  EXPECT_NE(short_line.status().message().find("m.npy: line 1"), std::string::npos);
  auto label = ParsePathfinderMetadata("imgs/0 sample_0.png 0 2\n", "m.npy");
  EXPECT_NE(label.status().message().find("must be 0 or 1"), std::string::npos);
  auto escape = ParsePathfinderMetadata("../x sample_0.png 0 1\n", "m.npy");
  EXPECT_FALSE(escape.ok());
  EXPECT_EQ(ReadPathfinderIndex(dir).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace hgeval::tasks::lra
