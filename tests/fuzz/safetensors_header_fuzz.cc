// libFuzzer target: the input is a whole safetensors file. Parsing must either fail with a
// status or yield tensors whose every byte can be read (ReadFloat, RawBytes, ContentHash)
// without leaving the input buffer; ASan/UBSan report anything else.
#include <cstddef>
#include <cstdint>

#include "engine/loader/safetensors.h"
#include "engine/loader/tensor_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto tensors = hgeval::ParseSafetensors("<fuzz input>", absl::Span<const uint8_t>(data, size));
  if (!tensors.ok()) return 0;
  hgeval::TensorTableCheckpoint checkpoint(nlohmann::json::object(), "{}", "<fuzz input>");
  for (hgeval::SafetensorsTensor& tensor : *tensors) {
    checkpoint.AddTensor({std::move(tensor.info), tensor.bytes, {}});
  }
  for (const std::string& name : checkpoint.TensorNames()) {
    (void)checkpoint.ReadFloat(name, {});
    auto raw = checkpoint.RawBytes(name);
    if (raw.ok() && !raw->empty()) {
      // Touch the first and last byte: they must lie inside the input.
      volatile uint8_t sink = (*raw)[0] ^ (*raw)[raw->size() - 1];
      (void)sink;
    }
  }
  (void)checkpoint.ContentHash();
  return 0;
}
