// OpenCheckpoint: a Hugging Face folder with config.json and model.safetensors, or
// model.safetensors.index.json and its shards; failing those, PyTorch's pytorch_model.bin
// or pytorch_model.bin.index.json and its shards (torch.save archives).
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/loader/checkpoint.h"
#include "engine/loader/mapped_file.h"
#include "engine/loader/safetensors.h"
#include "engine/loader/tensor_table.h"
#include "engine/loader/torch_checkpoint.h"
#include "engine/util/status_macros.h"

namespace hgeval {
namespace {

namespace fs = std::filesystem;

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::error_code error;
  if (!fs::is_regular_file(path, error)) {
    return absl::NotFoundError(absl::StrCat(path, ": file not found"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::PermissionDeniedError(absl::StrCat(path, ": cannot open"));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat(path, ": read error"));
  return std::move(buffer).str();
}

absl::StatusOr<nlohmann::json> ParseJsonObject(const std::string& path, const std::string& text) {
  nlohmann::json value;
  try {
    value = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not valid JSON: ", e.what()));
  }
  if (!value.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected a JSON object, got ", value.type_name()));
  }
  return value;
}

// Maps and validates one weights file (safetensors, or a torch.save archive for names
// ending in .bin); its tensors are returned by name.
absl::StatusOr<std::map<std::string, TensorEntry>> OpenShard(const std::string& path,
                                                             TensorTableCheckpoint& table) {
  if (absl::EndsWith(path, ".bin")) return OpenTorchCheckpointFile(path, table);
  HG_ASSIGN_OR_RETURN(std::shared_ptr<const MappedFile> mapped, MappedFile::Open(path));
  HG_ASSIGN_OR_RETURN(std::vector<SafetensorsTensor> tensors,
                      ParseSafetensors(path, mapped->bytes()));
  table.KeepAlive(mapped);
  std::map<std::string, TensorEntry> entries;
  for (SafetensorsTensor& tensor : tensors) {
    std::string name = tensor.info.name;
    entries.emplace(std::move(name), TensorEntry{std::move(tensor.info), tensor.bytes, {}});
  }
  return entries;
}

// A shard name from the index must be a plain file name inside the folder.
bool IsPlainFileName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\\') == std::string::npos && name.find('\0') == std::string::npos;
}

absl::Status AddShardedTensors(const std::string& dir, const std::string& index_path,
                               TensorTableCheckpoint& table) {
  HG_ASSIGN_OR_RETURN(std::string index_text, ReadWholeFile(index_path));
  HG_ASSIGN_OR_RETURN(nlohmann::json index, ParseJsonObject(index_path, index_text));
  auto weight_map = index.find("weight_map");
  if (weight_map == index.end() || !weight_map->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(index_path, ": missing \"weight_map\" object"));
  }
  // Every shard is opened once, then each tensor is taken from the shard the index names.
  std::map<std::string, std::map<std::string, TensorEntry>> shards;
  for (auto it = weight_map->begin(); it != weight_map->end(); ++it) {
    if (!it.value().is_string() || !IsPlainFileName(it.value().get<std::string>())) {
      return absl::InvalidArgumentError(absl::StrCat(index_path, ": tensor '", it.key(),
                                                     "' maps to ", it.value().dump(),
                                                     ", not a file name in the folder"));
    }
    const std::string& shard_name = it.value().get_ref<const std::string&>();
    if (shards.count(shard_name) == 0) {
      const std::string shard_path = (fs::path(dir) / shard_name).string();
      auto entries = OpenShard(shard_path, table);
      if (!entries.ok()) {
        if (absl::IsNotFound(entries.status())) {
          return absl::NotFoundError(absl::StrCat(index_path, ": shard '", shard_name,
                                                  "' (holding tensor '", it.key(),
                                                  "') is missing: ", entries.status().message()));
        }
        return entries.status();
      }
      shards.emplace(shard_name, std::move(*entries));
    }
    auto& shard = shards.at(shard_name);
    auto found = shard.find(it.key());
    if (found == shard.end()) {
      return absl::NotFoundError(absl::StrCat(index_path, ": tensor '", it.key(),
                                              "' is not in shard ", shard_name,
                                              " where the index puts it"));
    }
    table.AddTensor(found->second);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Checkpoint>> OpenCheckpoint(const std::string& dir) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) {
    return absl::NotFoundError(absl::StrCat(dir, ": checkpoint folder not found"));
  }
  const std::string config_path = (fs::path(dir) / "config.json").string();
  HG_ASSIGN_OR_RETURN(std::string config_text, ReadWholeFile(config_path));
  HG_ASSIGN_OR_RETURN(nlohmann::json config, ParseJsonObject(config_path, config_text));
  auto table =
      std::make_unique<TensorTableCheckpoint>(std::move(config), std::move(config_text), dir);

  // safetensors first, as transformers prefers them when both are present.
  for (const char* stem : {"model.safetensors", "pytorch_model.bin"}) {
    const std::string single_path = (fs::path(dir) / stem).string();
    const std::string index_path = single_path + ".index.json";
    if (fs::exists(single_path, error)) {
      HG_ASSIGN_OR_RETURN(auto entries, OpenShard(single_path, *table));
      for (auto& [name, entry] : entries) table->AddTensor(std::move(entry));
      return std::unique_ptr<Checkpoint>(std::move(table));
    }
    if (fs::exists(index_path, error)) {
      HG_RETURN_IF_ERROR(AddShardedTensors(dir, index_path, *table));
      return std::unique_ptr<Checkpoint>(std::move(table));
    }
  }
  return absl::NotFoundError(
      absl::StrCat(dir,
                   ": no weights: none of model.safetensors, model.safetensors.index.json, "
                   "pytorch_model.bin, pytorch_model.bin.index.json is present"));
}

}  // namespace hgeval
