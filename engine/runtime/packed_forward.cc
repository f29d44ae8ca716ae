#include "engine/runtime/packed_forward.h"

#include "engine/util/status_macros.h"

namespace hgeval {

absl::Status ForwardInPacks(Model& model, absl::Span<const ForwardItem> items,
                            absl::Span<ForwardOutput> outputs, int64_t budget_tokens,
                            const std::function<bool()>& cancelled,
                            const std::function<void(size_t, size_t)>& after_pack) {
  size_t first = 0;
  while (first < items.size()) {
    if (cancelled && cancelled()) return absl::CancelledError("cancelled");
    size_t last = first;
    int64_t tokens = 0;
    while (last < items.size()) {
      const int64_t n = static_cast<int64_t>(items[last].tokens.size());
      if (budget_tokens > 0 && last > first && tokens + n > budget_tokens) break;
      tokens += n;
      ++last;
    }
    HG_RETURN_IF_ERROR(
        model.Forward(items.subspan(first, last - first), outputs.subspan(first, last - first)));
    if (after_pack) after_pack(first, last);
    first = last;
  }
  return absl::OkStatus();
}

}  // namespace hgeval
