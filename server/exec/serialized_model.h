// A Model that serialises every call on the model it owns. The server drives one model
// from its scheduler thread and from job threads (NIAH sweeps feed the model directly to
// reuse the haystack prefix); Model::Forward is not re-entrant, so both go through this
// wrapper and take turns call by call.
#ifndef HGEVAL_SERVER_EXEC_SERIALIZED_MODEL_H_
#define HGEVAL_SERVER_EXEC_SERIALIZED_MODEL_H_

#include <memory>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "engine/model/forwarding_model.h"

namespace hgeval::server {

class SerializedModel : public ForwardingModel {
 public:
  explicit SerializedModel(std::unique_ptr<Model> model) : ForwardingModel(std::move(model)) {}

  std::unique_ptr<SequenceState> NewState() const override {
    absl::MutexLock lock(&mu_);
    return inner().NewState();
  }
  absl::Status Forward(absl::Span<const ForwardItem> items,
                       absl::Span<ForwardOutput> outputs) override {
    absl::MutexLock lock(&mu_);
    return inner().Forward(items, outputs);
  }
  std::unique_ptr<SequenceState> NewStateFor(const SequenceState* start,
                                             int64_t tokens) const override {
    absl::MutexLock lock(&mu_);
    return inner().NewStateFor(start, tokens);
  }

 private:
  mutable absl::Mutex mu_;
};

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_EXEC_SERIALIZED_MODEL_H_
