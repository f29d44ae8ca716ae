#include "tasks/lra/lra_tasks.h"

#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "tasks/api/data_files.h"
#include "tasks/api/registry.h"
#include "tasks/lra/cifar10.h"
#include "tasks/lra/listops_data.h"
#include "tasks/lra/pathfinder.h"
#include "tasks/lra/text_data.h"

namespace hgeval::tasks::lra {

struct LraTask::ImageCache {
  absl::Mutex mu;
  std::vector<Image> images ABSL_GUARDED_BY(mu);
};

namespace {

struct TaskInfo {
  const char* name;
  const char* path;  // under the data folder
  const char* description;
};

TaskInfo InfoOf(LraTaskKind kind) {
  switch (kind) {
    case LraTaskKind::kListOps:
      return {"lra_listops", "lra/listops/basic_test.tsv",
              "LRA ListOps (listops-1000 basic_test.tsv format), 10 classes"};
    case LraTaskKind::kText:
      return {"lra_text", "lra/imdb/test.jsonl",
              "LRA Text: IMDB reviews, byte/char level, 2 classes"};
    case LraTaskKind::kRetrieval:
      return {"lra_retrieval", "lra/aan/new_aan_pairs.test.tsv",
              "LRA Retrieval: ACL Anthology Network citation pairs, 2 classes"};
    case LraTaskKind::kImage:
      return {"lra_image", "lra/cifar10/test_batch.bin",
              "LRA Image: CIFAR-10 test batch, 10 classes"};
    case LraTaskKind::kPathfinder:
      return {"lra_pathfinder", "lra/pathfinder32/curv_contour_length_14",
              "LRA Pathfinder 32x32, hard (curv_contour_length_14), 2 classes"};
    case LraTaskKind::kPathX:
      return {"lra_pathx", "lra/pathfinder128/curv_contour_length_14",
              "LRA Path-X 128x128, hard (curv_contour_length_14), 2 classes"};
  }
  return {"lra_unknown", "", ""};
}

template <typename T>
absl::StatusOr<std::vector<T>> ReadOrGz(
    const std::string& path,
    absl::StatusOr<std::vector<T>> (*parse)(const std::string&, const std::string&)) {
  absl::StatusOr<std::string> text = ReadDataFileOrGz(path);
  if (!text.ok()) return text.status();
  return parse(*text, path);
}

}  // namespace

LraTask::LraTask(LraTaskKind kind) : kind_(kind), images_(std::make_unique<ImageCache>()) {}
LraTask::~LraTask() = default;

std::string LraTask::name() const { return InfoOf(kind_).name; }

nlohmann::json LraTask::config() const {
  const TaskInfo info = InfoOf(kind_);
  return {{"dataset_path", info.path},
          {"description", info.description},
          {"test_split", "test"},
          {"output_type", RequestTypeName(output_type())},
          {"metric", "accuracy: argmax(logits) == label"}};
}

std::vector<MetricSpec> LraTask::metrics() const { return {{"acc", Aggregation::kMean, true}}; }

absl::StatusOr<std::vector<Doc>> LraTask::LoadDocs(const std::string& data_dir) const {
  const std::string path = absl::StrCat(data_dir, "/", InfoOf(kind_).path);
  std::vector<Doc> docs;
  switch (kind_) {
    case LraTaskKind::kListOps: {
      auto examples = ReadOrGz<ListOpsExample>(path, &ParseListOpsTsv);
      if (!examples.ok()) return examples.status();
      for (ListOpsExample& e : *examples) {
        docs.push_back({{"source", e.source}, {"label", e.label}});
      }
      break;
    }
    case LraTaskKind::kText: {
      auto examples = ReadOrGz<TextExample>(path, &ParseImdbJsonl);
      if (!examples.ok()) return examples.status();
      for (TextExample& e : *examples) docs.push_back({{"text", e.text}, {"label", e.label}});
      break;
    }
    case LraTaskKind::kRetrieval: {
      auto pairs = ReadOrGz<DocumentPair>(path, &ParseAanTsv);
      if (!pairs.ok()) return pairs.status();
      for (DocumentPair& p : *pairs) {
        docs.push_back({{"id1", p.id1},
                        {"id2", p.id2},
                        {"text1", p.text1},
                        {"text2", p.text2},
                        {"label", p.label}});
      }
      break;
    }
    case LraTaskKind::kImage: {
      auto images = ReadCifar10Batch(path);
      if (!images.ok()) return images.status();
      for (size_t i = 0; i < images->size(); ++i) {
        docs.push_back({{"record", i}, {"label", (*images)[i].label}});
      }
      absl::MutexLock lock(&images_->mu);
      images_->images = *std::move(images);
      break;
    }
    case LraTaskKind::kPathfinder:
    case LraTaskKind::kPathX: {
      auto entries = ReadPathfinderIndex(path);
      if (!entries.ok()) return entries.status();
      const size_t first = entries->size() - entries->size() / 10;  // the last 10%
      for (size_t i = first; i < entries->size(); ++i) {
        docs.push_back({{"image", absl::StrCat(path, "/", (*entries)[i].image)},
                        {"label", (*entries)[i].label}});
      }
      break;
    }
  }
  return docs;
}

absl::StatusOr<std::vector<Request>> LraTask::Requests(const Doc& doc) const {
  Request request;
  request.type = RequestType::kClassify;
  switch (kind_) {
    case LraTaskKind::kListOps:
      request.documents.push_back({doc["source"].get<std::string>(), {}, 0});
      break;
    case LraTaskKind::kText:
      request.documents.push_back({doc["text"].get<std::string>(), {}, 0});
      break;
    case LraTaskKind::kRetrieval:
      request.documents.push_back({doc["text1"].get<std::string>(), {}, 0});
      request.documents.push_back({doc["text2"].get<std::string>(), {}, 0});
      break;
    case LraTaskKind::kImage: {
      absl::MutexLock lock(&images_->mu);
      const size_t record = doc["record"].get<size_t>();
      if (record >= images_->images.size()) {
        return absl::FailedPreconditionError("lra_image: docs used before LoadDocs loaded them");
      }
      const Image& image = images_->images[record];
      request.documents.push_back({"", image.pixels, image.channels});
      break;
    }
    case LraTaskKind::kPathfinder:
    case LraTaskKind::kPathX: {
      absl::StatusOr<Image> image = ReadGrayPng(doc["image"].get<std::string>());
      if (!image.ok()) return image.status();
      request.documents.push_back({"", std::move(image->pixels), 1});
      break;
    }
  }
  return std::vector<Request>{std::move(request)};
}

absl::StatusOr<DocMetrics> LraTask::Process(const Doc& doc,
                                            absl::Span<const Response> responses) const {
  if (responses.size() != 1) {
    return absl::InternalError(absl::StrCat(name(), ": expected one response per doc"));
  }
  MetricSample sample;
  sample.value = responses[0].predicted == doc["label"].get<int>() ? 1.0 : 0.0;
  return DocMetrics{{"acc", sample}};
}

HGEVAL_REGISTER_TASK("lra_listops",
                     [] { return std::make_unique<LraTask>(LraTaskKind::kListOps); });
HGEVAL_REGISTER_TASK("lra_text", [] { return std::make_unique<LraTask>(LraTaskKind::kText); });
HGEVAL_REGISTER_TASK("lra_retrieval",
                     [] { return std::make_unique<LraTask>(LraTaskKind::kRetrieval); });
HGEVAL_REGISTER_TASK("lra_image", [] { return std::make_unique<LraTask>(LraTaskKind::kImage); });
HGEVAL_REGISTER_TASK("lra_pathfinder",
                     [] { return std::make_unique<LraTask>(LraTaskKind::kPathfinder); });
HGEVAL_REGISTER_TASK("lra_pathx", [] { return std::make_unique<LraTask>(LraTaskKind::kPathX); });

}  // namespace hgeval::tasks::lra
