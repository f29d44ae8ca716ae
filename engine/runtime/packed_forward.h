// Runs a list of forward items through Model::Forward in packs of bounded token count:
// how the evaluator's scoring and every decode step bound one call's memory. A pack takes
// consecutive items while their tokens fit the budget; an item longer than the budget runs
// alone. Results do not depend on the packing (the engine's batch invariance).
#ifndef HGEVAL_ENGINE_RUNTIME_PACKED_FORWARD_H_
#define HGEVAL_ENGINE_RUNTIME_PACKED_FORWARD_H_

#include <cstddef>
#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "engine/model/model.h"

namespace hgeval {

// `budget_tokens` <= 0: every item in one call. `cancelled` (optional) is polled before
// each call: true stops with CANCELLED. `after_pack(first, last)` (optional) sees each
// finished range [first, last) of items.
absl::Status ForwardInPacks(Model& model, absl::Span<const ForwardItem> items,
                            absl::Span<ForwardOutput> outputs, int64_t budget_tokens,
                            const std::function<bool()>& cancelled = nullptr,
                            const std::function<void(size_t, size_t)>& after_pack = nullptr);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_RUNTIME_PACKED_FORWARD_H_
