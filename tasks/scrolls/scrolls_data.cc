#include "tasks/scrolls/scrolls_data.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/tokenizer/utf8.h"
#include "engine/util/status_macros.h"
#include "metrics/text_counts.h"
#include "re2/re2.h"
#include "tasks/api/data_files.h"

namespace hgeval::tasks {
namespace {

absl::StatusOr<std::string> StringField(const nlohmann::json& object, const char* key,
                                        const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) {
    return absl::DataLossError(absl::StrCat(where, ": no string field \"", key, "\""));
  }
  return it->get<std::string>();
}

// Byte length of the first / last UTF-8 code point of a non-empty string.
size_t FirstCodePointBytes(std::string_view s) {
  size_t i = 0;
  utf8::NextCodePointLenient(s, &i);
  return i;
}
size_t LastCodePointBytes(std::string_view s) {
  size_t n = 1;
  while (n < s.size() && n < 4 && (static_cast<unsigned char>(s[s.size() - n]) & 0xC0) == 0x80) {
    ++n;
  }
  return n;
}

absl::StatusOr<std::string> ReadFirstOf(const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    if (DataFileExists(path)) return ReadDataFile(path);
  }
  return absl::NotFoundError(absl::StrCat("none of ", absl::StrJoin(paths, ", ")));
}

}  // namespace

absl::StatusOr<std::vector<ScrollsRecord>> ParseScrollsRecords(const std::string& jsonl,
                                                               const std::string& name) {
  HG_ASSIGN_OR_RETURN(std::vector<nlohmann::json> lines, ParseJsonLines(jsonl, name));
  std::vector<ScrollsRecord> records;
  records.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string where = absl::StrCat(name, " record ", i);
    ScrollsRecord record;
    HG_ASSIGN_OR_RETURN(record.id, StringField(lines[i], "id", where));
    HG_ASSIGN_OR_RETURN(record.input, StringField(lines[i], "input", where));
    HG_ASSIGN_OR_RETURN(record.output, StringField(lines[i], "output", where));
    if (auto pid = lines[i].find("pid"); pid != lines[i].end() && pid->is_string()) {
      record.pid = pid->get<std::string>();
    }
    records.push_back(std::move(record));
  }
  return records;
}

absl::StatusOr<std::vector<ScrollsRecord>> ContractNliRecordsFromRaw(const std::string& dev_json,
                                                                     const std::string& name) {
  // ordered_json: the annotations are taken in file order, as Python's dict keeps them.
  const nlohmann::ordered_json root =
      nlohmann::ordered_json::parse(dev_json, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object() || !root.contains("documents") ||
      !root.contains("labels")) {
    return absl::DataLossError(name + ": not a ContractNLI file (documents, labels)");
  }
  const std::map<std::string, std::string> choice_names = {{"Entailment", "Entailment"},
                                                           {"Contradiction", "Contradiction"},
                                                           {"NotMentioned", "Not mentioned"}};
  const auto& labels = root["labels"];
  std::vector<ScrollsRecord> records;
  for (const auto& document : root["documents"]) {
    if (!document.contains("id") || !document.contains("text") ||
        !document.contains("annotation_sets") || document["annotation_sets"].empty()) {
      return absl::DataLossError(name + ": a document lacks id, text or annotation_sets");
    }
    const std::string document_id =
        document["id"].is_string() ? document["id"].get<std::string>() : document["id"].dump();
    const std::string text = document["text"].get<std::string>();
    for (const auto& [key, annotation] : document["annotation_sets"][0]["annotations"].items()) {
      if (!labels.contains(key) || !labels[key].contains("hypothesis")) {
        return absl::DataLossError(absl::StrCat(name, ": unknown hypothesis ", key));
      }
      auto choice = choice_names.find(annotation.value("choice", ""));
      if (choice == choice_names.end()) {
        return absl::DataLossError(
            absl::StrCat(name, ": document ", document_id, " ", key, ": unknown choice"));
      }
      ScrollsRecord record;
      record.id = absl::StrCat(document_id, "_", key);
      record.pid = record.id + "_0";
      record.input = labels[key]["hypothesis"].get<std::string>() + "\n\n" + text;
      record.output = choice->second;
      records.push_back(std::move(record));
    }
  }
  return records;
}

absl::StatusOr<std::vector<ScrollsRecord>> QmsumRecordsFromRaw(const std::string& jsonl,
                                                               const std::string& split,
                                                               const std::string& name) {
  HG_ASSIGN_OR_RETURN(std::vector<nlohmann::json> meetings, ParseJsonLines(jsonl, name));
  std::vector<ScrollsRecord> records;
  for (size_t m = 0; m < meetings.size(); ++m) {
    const nlohmann::json& meeting = meetings[m];
    const std::string where = absl::StrCat(name, " meeting ", m);
    if (!meeting.contains("meeting_transcripts")) {
      return absl::DataLossError(where + ": no meeting_transcripts");
    }
    std::vector<std::string> lines;
    for (const auto& turn : meeting["meeting_transcripts"]) {
      HG_ASSIGN_OR_RETURN(std::string speaker, StringField(turn, "speaker", where));
      HG_ASSIGN_OR_RETURN(std::string content, StringField(turn, "content", where));
      lines.push_back(absl::StrCat(speaker, ": ", content));
    }
    const std::string transcript = absl::StrJoin(lines, "\n");
    size_t q = 0;
    for (const char* list : {"general_query_list", "specific_query_list"}) {
      if (!meeting.contains(list)) continue;
      for (const auto& query : meeting[list]) {
        ScrollsRecord record;
        record.id = absl::StrCat("qmsum_", split, "_", m, "_", q++);
        record.pid = record.id + "_0";
        HG_ASSIGN_OR_RETURN(std::string question, StringField(query, "query", where));
        HG_ASSIGN_OR_RETURN(record.output, StringField(query, "answer", where));
        record.input = absl::StrCat(question, "\n\n", transcript);
        records.push_back(std::move(record));
      }
    }
  }
  return records;
}

absl::StatusOr<std::vector<ScrollsRecord>> LoadScrollsValidation(const std::string& data_dir,
                                                                 const std::string& subset) {
  const std::string folder = data_dir + "/scrolls/" + subset;
  const std::string scrolls_file = folder + "/validation.jsonl";
  if (DataFileExists(scrolls_file) || DataFileExists(scrolls_file + ".gz")) {
    HG_ASSIGN_OR_RETURN(std::string text, ReadDataFileOrGz(scrolls_file));
    return ParseScrollsRecords(text, scrolls_file);
  }
  if (subset == "contract_nli") {
    const std::vector<std::string> paths = {folder + "/dev.json", folder + "/dev.json.gz"};
    if (DataFileExists(paths[0]) || DataFileExists(paths[1])) {
      HG_ASSIGN_OR_RETURN(std::string text, ReadFirstOf(paths));
      return ContractNliRecordsFromRaw(text, folder + "/dev.json");
    }
  }
  if (subset == "qmsum") {
    const std::vector<std::string> paths = {folder + "/val.jsonl", folder + "/val.jsonl.gz"};
    if (DataFileExists(paths[0]) || DataFileExists(paths[1])) {
      HG_ASSIGN_OR_RETURN(std::string text, ReadFirstOf(paths));
      return QmsumRecordsFromRaw(text, "val", folder + "/val.jsonl");
    }
  }
  return absl::NotFoundError(
      absl::StrCat("no SCROLLS ", subset, " validation data: expected ", scrolls_file, "(.gz)",
                   subset == "contract_nli" ? " or ContractNLI's dev.json(.gz)" : "",
                   subset == "qmsum" ? " or QMSum's val.jsonl(.gz)" : "", " (see data/README.md)"));
}

std::vector<Doc> MergeDuplicateIds(const std::vector<ScrollsRecord>& records) {
  std::vector<Doc> docs;
  std::map<std::string, size_t> doc_of_id;
  for (const ScrollsRecord& record : records) {
    auto [it, inserted] = doc_of_id.emplace(record.id, docs.size());
    if (!inserted) {
      docs[it->second]["outputs"].push_back(record.output);
      continue;
    }
    Doc doc;
    doc["id"] = record.id;
    doc["pid"] = record.pid;
    doc["input"] = record.input;
    doc["outputs"] = nlohmann::json::array({record.output});
    docs.push_back(std::move(doc));
  }
  return docs;
}

QuestionAndText SplitQuestion(std::string_view input) {
  const size_t blank = input.find("\n\n");
  if (blank != std::string_view::npos) {
    return {std::string(input.substr(0, blank)), std::string(input.substr(blank + 2))};
  }
  if (input.empty()) return {};
  // Python: input[0:-1] and input[1:].
  return {std::string(input.substr(0, input.size() - LastCodePointBytes(input))),
          std::string(input.substr(FirstCodePointBytes(input)))};
}

absl::Status ExtractQualityChoices(Doc& doc) {
  const std::string text = doc["text"].get<std::string>();
  const size_t d = text.find("(D)");
  const size_t split = d == std::string::npos ? std::string::npos : text.find("\n\n", d);
  if (split == std::string::npos) {
    return absl::DataLossError(
        absl::StrCat("quality doc ", doc.value("id", ""), ": no blank line after a (D) choice"));
  }
  const std::string block = text.substr(0, split);
  static const RE2 kMarker(R"(( *\([A-D]\) *))");
  std::vector<std::string> choices;
  re2::StringPiece rest(block);
  re2::StringPiece marker;
  bool first_piece = true;
  // re.split: the pieces between successive (leftmost) matches; the first is dropped.
  while (RE2::PartialMatch(rest, kMarker, &marker)) {
    const size_t at = static_cast<size_t>(marker.data() - rest.data());
    if (!first_piece) choices.emplace_back(rest.data(), at);
    first_piece = false;
    rest.remove_prefix(at + marker.size());
  }
  if (!first_piece) choices.emplace_back(rest.data(), rest.size());
  for (std::string& choice : choices) choice = absl::StrJoin(metrics::PythonSplit(choice), " ");
  const std::string gold_text =
      absl::StrJoin(metrics::PythonSplit(doc["outputs"][0].get<std::string>()), " ");
  auto gold = std::find(choices.begin(), choices.end(), gold_text);
  if (gold == choices.end()) {
    return absl::DataLossError(
        absl::StrCat("quality doc ", doc.value("id", ""), ": the answer is not among the choices"));
  }
  doc["text"] = std::string(metrics::PythonStrip(std::string_view(text).substr(split)));
  doc["choices"] = choices;
  doc["gold"] = static_cast<int64_t>(gold - choices.begin());
  return absl::OkStatus();
}

}  // namespace hgeval::tasks
