// The zero-shot multiple-choice suite: piqa, hellaswag, arc_easy, arc_challenge,
// openbookqa, boolq, social_iqa (docs/specs/lm-eval-tasks.md §4). Each doc keeps the
// field names of the lm-eval dataset it stands for.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/util/status_macros.h"
#include "tasks/api/data_files.h"
#include "tasks/api/registry.h"
#include "tasks/api/text_preprocess.h"
#include "tasks/commonsense/multiple_choice_task.h"

namespace hgeval::tasks {
namespace {

absl::StatusOr<std::string> Field(const Doc& doc, const char* key) {
  auto it = doc.find(key);
  if (it == doc.end() || !it->is_string()) {
    return absl::DataLossError(absl::StrCat("doc has no string field \"", key, "\""));
  }
  return it->get<std::string>();
}

// Gold index from a label list; lm-eval maps a missing label to -100 (never correct).
int64_t IndexOf(const std::vector<std::string>& labels, const std::string& key) {
  auto it = std::find(labels.begin(), labels.end(), key);
  return it == labels.end() ? -100 : static_cast<int64_t>(it - labels.begin());
}

absl::StatusOr<std::vector<Doc>> LoadJsonl(const std::string& path) {
  HG_ASSIGN_OR_RETURN(std::string text, ReadDataFileOrGz(path));
  return ParseJsonLines(text, path);
}

// Attaches one label line per doc as `field` (as an int or the raw string).
absl::Status AttachLabels(std::vector<Doc>* docs, const std::string& labels_path, const char* field,
                          bool as_int) {
  HG_ASSIGN_OR_RETURN(std::string text, ReadDataFileOrGz(labels_path));
  std::vector<std::string> labels;
  for (auto& line : SplitLines(text)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) labels.push_back(line);
  }
  if (labels.size() != docs->size()) {
    return absl::DataLossError(
        absl::StrCat(labels_path, " has ", labels.size(), " labels for ", docs->size(), " docs"));
  }
  for (size_t i = 0; i < docs->size(); ++i) {
    if (as_int) {
      (*docs)[i][field] = std::stoll(labels[i]);
    } else {
      (*docs)[i][field] = labels[i];
    }
  }
  return absl::OkStatus();
}

// ---- piqa ---------------------------------------------------------------------------
class PiqaTask : public MultipleChoiceTask {
 public:
  std::string name() const override { return "piqa"; }
  double version() const override { return 1.0; }
  bool has_acc_norm() const override { return true; }
  nlohmann::json config() const override {
    return {{"dataset_path", "baber/piqa"},
            {"validation_split", "validation"},
            {"output_type", "multiple_choice"},
            {"doc_to_text", "Question: {{goal}}\nAnswer:"},
            {"doc_to_target", "label"},
            {"doc_to_choice", "{{[sol1, sol2]}}"},
            {"target_delimiter", " "},
            {"data_files", "piqa/valid.jsonl + piqa/valid-labels.lst"}};
  }
  absl::StatusOr<std::vector<Doc>> LoadDocs(const std::string& data_dir) const override {
    HG_ASSIGN_OR_RETURN(auto docs, LoadJsonl(data_dir + "/piqa/valid.jsonl"));
    HG_RETURN_IF_ERROR(AttachLabels(&docs, data_dir + "/piqa/valid-labels.lst", "label", true));
    return docs;
  }
  absl::StatusOr<std::string> DocToText(const Doc& doc) const override {
    HG_ASSIGN_OR_RETURN(std::string goal, Field(doc, "goal"));
    return "Question: " + goal + "\nAnswer:";
  }
  absl::StatusOr<std::vector<std::string>> DocToChoice(const Doc& doc) const override {
    HG_ASSIGN_OR_RETURN(std::string sol1, Field(doc, "sol1"));
    HG_ASSIGN_OR_RETURN(std::string sol2, Field(doc, "sol2"));
    return std::vector<std::string>{sol1, sol2};
  }
  absl::StatusOr<int64_t> DocToTarget(const Doc& doc) const override {
    return doc.value("label", int64_t{-100});
  }
};

// ---- hellaswag ----------------------------------------------------------------------
// Raw HellaSwag jsonl (ctx_a, ctx_b, activity_label, endings, label) is processed
// exactly as lm-eval does; the shipped data/hellaswag jsonl has lost ctx_a/ctx_b and is
// reconstructed by HellaswagQueryFromJoined (see data/README.md).
class HellaswagTask : public MultipleChoiceTask {
 public:
  std::string name() const override { return "hellaswag"; }
  double version() const override { return 1.0; }
  bool has_acc_norm() const override { return true; }
  nlohmann::json config() const override {
    return {{"dataset_path", "Rowan/hellaswag"},
            {"validation_split", "validation"},
            {"output_type", "multiple_choice"},
            {"process_docs", "utils.process_docs"},
            {"doc_to_text", "{{query}}"},
            {"doc_to_target", "{{label}}"},
            {"doc_to_choice", "choices"},
            {"target_delimiter", " "},
            {"data_files",
             "hellaswag/hellaswag_val.jsonl (raw, exact) if present, else "
             "hellaswag/validation_preprocessed.jsonl.gz (ctx_b capitalisation "
             "reconstructed)"}};
  }
  absl::StatusOr<std::vector<Doc>> LoadDocs(const std::string& data_dir) const override {
    const std::string raw = data_dir + "/hellaswag/hellaswag_val.jsonl";
    std::vector<Doc> out;
    if (DataFileExists(raw) || DataFileExists(raw + ".gz")) {
      HG_ASSIGN_OR_RETURN(auto docs, LoadJsonl(raw));
      for (const Doc& doc : docs) {
        HG_ASSIGN_OR_RETURN(std::string ctx_a, Field(doc, "ctx_a"));
        HG_ASSIGN_OR_RETURN(std::string ctx_b, Field(doc, "ctx_b"));
        HG_ASSIGN_OR_RETURN(std::string label, Field(doc, "activity_label"));
        Doc processed = doc;
        processed["query"] =
            HellaswagPreprocess(absl::StrCat(label, ": ", ctx_a, " ", PyCapitalizeAscii(ctx_b)));
        std::vector<std::string> choices;
        for (const auto& ending : doc.at("endings")) {
          choices.push_back(HellaswagPreprocess(ending.get<std::string>()));
        }
        processed["choices"] = choices;
        const std::string gold = doc.at("label").is_string()
                                     ? doc.at("label").get<std::string>()
                                     : std::to_string(doc.at("label").get<int64_t>());
        processed["gold"] = std::stoll(gold);
        out.push_back(std::move(processed));
      }
      return out;
    }
    HG_ASSIGN_OR_RETURN(auto docs,
                        LoadJsonl(data_dir + "/hellaswag/validation_preprocessed.jsonl.gz"));
    for (Doc& doc : docs) {
      HG_ASSIGN_OR_RETURN(std::string joined, Field(doc, "query"));
      doc["source_query"] = joined;
      doc["query"] = HellaswagQueryFromJoined(joined);
      std::vector<std::string> choices;
      for (const auto& ending : doc.at("choices")) {
        choices.push_back(HellaswagPreprocess(ending.get<std::string>()));
      }
      doc["choices"] = choices;
      out.push_back(std::move(doc));
    }
    return out;
  }
  absl::StatusOr<std::string> DocToText(const Doc& doc) const override {
    return Field(doc, "query");
  }
  absl::StatusOr<std::vector<std::string>> DocToChoice(const Doc& doc) const override {
    return doc.at("choices").get<std::vector<std::string>>();
  }
  absl::StatusOr<int64_t> DocToTarget(const Doc& doc) const override {
    return doc.value("gold", int64_t{-100});
  }
};

// ---- arc_easy / arc_challenge -------------------------------------------------------
class ArcTask : public MultipleChoiceTask {
 public:
  ArcTask(std::string name, std::string subset, std::string file)
      : name_(std::move(name)), subset_(std::move(subset)), file_(std::move(file)) {}
  std::string name() const override { return name_; }
  double version() const override { return 1.0; }
  bool has_acc_norm() const override { return true; }
  nlohmann::json config() const override {
    return {{"dataset_path", "allenai/ai2_arc"},
            {"dataset_name", subset_},
            {"test_split", "test"},
            {"output_type", "multiple_choice"},
            {"doc_to_text", "Question: {{question}}\nAnswer:"},
            {"doc_to_target", "{{choices.label.index(answerKey)}}"},
            {"doc_to_choice", "{{choices.text}}"},
            {"target_delimiter", " "},
            {"data_files", "arc/" + file_}};
  }
  absl::StatusOr<std::vector<Doc>> LoadDocs(const std::string& data_dir) const override {
    return LoadJsonl(data_dir + "/arc/" + file_);
  }
  absl::StatusOr<std::string> DocToText(const Doc& doc) const override {
    HG_ASSIGN_OR_RETURN(std::string question, Field(doc, "question"));
    return "Question: " + question + "\nAnswer:";
  }
  absl::StatusOr<std::vector<std::string>> DocToChoice(const Doc& doc) const override {
    return doc.at("choices").at("text").get<std::vector<std::string>>();
  }
  absl::StatusOr<int64_t> DocToTarget(const Doc& doc) const override {
    HG_ASSIGN_OR_RETURN(std::string key, Field(doc, "answerKey"));
    return IndexOf(doc.at("choices").at("label").get<std::vector<std::string>>(), key);
  }

 private:
  std::string name_, subset_, file_;
};

// ---- openbookqa ---------------------------------------------------------------------
class OpenBookQaTask : public MultipleChoiceTask {
 public:
  std::string name() const override { return "openbookqa"; }
  double version() const override { return 1.0; }
  bool has_acc_norm() const override { return true; }
  nlohmann::json config() const override {
    return {{"dataset_path", "allenai/openbookqa"},
            {"dataset_name", "main"},
            {"test_split", "test"},
            {"output_type", "multiple_choice"},
            {"doc_to_text", "question_stem"},
            {"doc_to_target", "{{choices.label.index(answerKey.lstrip())}}"},
            {"doc_to_choice", "{{choices.text}}"},
            {"target_delimiter", " "},
            {"data_files", "openbookqa/main_test.jsonl"}};
  }
  absl::StatusOr<std::vector<Doc>> LoadDocs(const std::string& data_dir) const override {
    return LoadJsonl(data_dir + "/openbookqa/main_test.jsonl");
  }
  absl::StatusOr<std::string> DocToText(const Doc& doc) const override {
    return Field(doc, "question_stem");
  }
  absl::StatusOr<std::vector<std::string>> DocToChoice(const Doc& doc) const override {
    return doc.at("choices").at("text").get<std::vector<std::string>>();
  }
  absl::StatusOr<int64_t> DocToTarget(const Doc& doc) const override {
    HG_ASSIGN_OR_RETURN(std::string key, Field(doc, "answerKey"));
    size_t start = 0;
    while (start < key.size() &&
           (key[start] == ' ' || key[start] == '\t' || key[start] == '\n' || key[start] == '\r')) {
      ++start;
    }
    return IndexOf(doc.at("choices").at("label").get<std::vector<std::string>>(),
                   key.substr(start));
  }
};

// ---- boolq --------------------------------------------------------------------------
class BoolqTask : public MultipleChoiceTask {
 public:
  std::string name() const override { return "boolq"; }
  double version() const override { return 2.0; }
  bool has_acc_norm() const override { return false; }
  nlohmann::json config() const override {
    return {{"dataset_path", "aps/super_glue"},
            {"dataset_name", "boolq"},
            {"validation_split", "validation"},
            {"output_type", "multiple_choice"},
            {"doc_to_text", "{{passage}}\nQuestion: {{question}}?\nAnswer:"},
            {"doc_to_target", "label"},
            {"doc_to_choice", "['no', 'yes']"},
            {"target_delimiter", " "},
            {"data_files", "boolq/validation.jsonl.gz (no \"title -- \" passage prefix)"}};
  }
  absl::StatusOr<std::vector<Doc>> LoadDocs(const std::string& data_dir) const override {
    return LoadJsonl(data_dir + "/boolq/validation.jsonl");
  }
  absl::StatusOr<std::string> DocToText(const Doc& doc) const override {
    HG_ASSIGN_OR_RETURN(std::string passage, Field(doc, "passage"));
    HG_ASSIGN_OR_RETURN(std::string question, Field(doc, "question"));
    return passage + "\nQuestion: " + question + "?\nAnswer:";
  }
  absl::StatusOr<std::vector<std::string>> DocToChoice(const Doc&) const override {
    return std::vector<std::string>{"no", "yes"};
  }
  absl::StatusOr<int64_t> DocToTarget(const Doc& doc) const override {
    const auto& label = doc.at("label");
    if (label.is_boolean()) return label.get<bool>() ? 1 : 0;
    return label.get<int64_t>();
  }
};

// ---- social_iqa ---------------------------------------------------------------------
class SocialIqaTask : public MultipleChoiceTask {
 public:
  std::string name() const override { return "social_iqa"; }
  double version() const override { return 0.0; }
  bool has_acc_norm() const override { return false; }
  nlohmann::json config() const override {
    return {{"dataset_path", "lighteval/siqa"},
            {"validation_split", "validation"},
            {"output_type", "multiple_choice"},
            {"doc_to_text", "Q: {{context}} {{question}}\nA:"},
            {"doc_to_target", "{{ (label|int) - 1 }}"},
            {"doc_to_choice", "{{[answerA, answerB, answerC]}}"},
            {"target_delimiter", " "},
            {"data_files", "social_iqa/dev.jsonl + social_iqa/dev-labels.lst"}};
  }
  absl::StatusOr<std::vector<Doc>> LoadDocs(const std::string& data_dir) const override {
    HG_ASSIGN_OR_RETURN(auto docs, LoadJsonl(data_dir + "/social_iqa/dev.jsonl"));
    HG_RETURN_IF_ERROR(
        AttachLabels(&docs, data_dir + "/social_iqa/dev-labels.lst", "label", false));
    return docs;
  }
  absl::StatusOr<std::string> DocToText(const Doc& doc) const override {
    HG_ASSIGN_OR_RETURN(std::string context, Field(doc, "context"));
    HG_ASSIGN_OR_RETURN(std::string question, Field(doc, "question"));
    return "Q: " + context + " " + question + "\nA:";
  }
  absl::StatusOr<std::vector<std::string>> DocToChoice(const Doc& doc) const override {
    HG_ASSIGN_OR_RETURN(std::string a, Field(doc, "answerA"));
    HG_ASSIGN_OR_RETURN(std::string b, Field(doc, "answerB"));
    HG_ASSIGN_OR_RETURN(std::string c, Field(doc, "answerC"));
    return std::vector<std::string>{a, b, c};
  }
  absl::StatusOr<int64_t> DocToTarget(const Doc& doc) const override {
    HG_ASSIGN_OR_RETURN(std::string label, Field(doc, "label"));
    return std::stoll(label) - 1;
  }
};

HGEVAL_REGISTER_TASK("piqa", [] { return std::make_unique<PiqaTask>(); });
HGEVAL_REGISTER_TASK("hellaswag", [] { return std::make_unique<HellaswagTask>(); });
HGEVAL_REGISTER_TASK("arc_easy", [] {
  return std::make_unique<ArcTask>("arc_easy", "ARC-Easy", "arc_easy_test.jsonl");
});
HGEVAL_REGISTER_TASK("arc_challenge", [] {
  return std::make_unique<ArcTask>("arc_challenge", "ARC-Challenge", "arc_challenge_test.jsonl");
});
HGEVAL_REGISTER_TASK("openbookqa", [] { return std::make_unique<OpenBookQaTask>(); });
HGEVAL_REGISTER_TASK("boolq", [] { return std::make_unique<BoolqTask>(); });
HGEVAL_REGISTER_TASK("social_iqa", [] { return std::make_unique<SocialIqaTask>(); });

}  // namespace
}  // namespace hgeval::tasks
