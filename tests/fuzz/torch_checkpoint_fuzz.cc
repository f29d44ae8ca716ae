// libFuzzer target: the input is a whole torch.save archive (pytorch_model.bin). The ZIP
// reader and the restricted unpickler must either fail with a status or yield tensors whose
// every byte can be read without leaving the input buffer; ASan/UBSan report anything else.
// Seeds: tests/engine/testdata/torch_bin/*.bin.
#include <cstddef>
#include <cstdint>

#include "engine/loader/tensor_table.h"
#include "engine/loader/torch_checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hgeval::TensorTableCheckpoint checkpoint(nlohmann::json::object(), "{}", "<fuzz input>");
  auto tensors = hgeval::ReadTorchCheckpoint("<fuzz input>", absl::Span<const uint8_t>(data, size),
                                             checkpoint);
  if (!tensors.ok()) return 0;
  for (auto& [name, entry] : *tensors) checkpoint.AddTensor(std::move(entry));
  for (const std::string& name : checkpoint.TensorNames()) {
    (void)checkpoint.ReadFloat(name, {});
    auto raw = checkpoint.RawBytes(name);
    if (raw.ok() && !raw->empty()) {
      volatile uint8_t sink = (*raw)[0] ^ (*raw)[raw->size() - 1];
      (void)sink;
    }
  }
  (void)checkpoint.ContentHash();
  return 0;
}
