#include "engine/model/model.h"

#include "absl/strings/str_cat.h"

namespace hgeval {
namespace {

absl::Status OutOfStateMemory(const char* what) {
  return absl::ResourceExhaustedError(
      absl::StrCat(what,
                   " failed: the backend is out of memory for another sequence state (fewer "
                   "sequences at once, or shorter ones, need less)"));
}

}  // namespace

std::unique_ptr<SequenceState> Model::NewStateFor(const SequenceState* start,
                                                  int64_t /*tokens*/) const {
  return start != nullptr ? start->Clone() : NewState();
}

absl::StatusOr<std::unique_ptr<SequenceState>> StartStateFor(const Model& model,
                                                             const SequenceState* start,
                                                             int64_t tokens) {
  std::unique_ptr<SequenceState> state = model.NewStateFor(start, tokens);
  if (state == nullptr) {
    return OutOfStateMemory(start != nullptr ? "copying a sequence state"
                                             : "creating a sequence state");
  }
  return state;
}

size_t Model::StateBytes(int64_t tokens) const {
  std::unique_ptr<SequenceState> empty = NewState();
  const size_t fixed = empty == nullptr ? 0 : empty->bytes();
  return fixed + static_cast<size_t>(info().state_bytes_per_token * tokens);
}

size_t Model::ReadOnlyForkBytes(int64_t start_tokens, int64_t tokens) const {
  return StateBytes(start_tokens + tokens);
}

absl::StatusOr<std::unique_ptr<SequenceState>> CloneState(const SequenceState& state) {
  std::unique_ptr<SequenceState> copy = state.Clone();
  if (copy == nullptr) return OutOfStateMemory("copying a sequence state");
  return copy;
}

absl::StatusOr<std::unique_ptr<SequenceState>> StartState(const Model& model,
                                                          const SequenceState* start) {
  if (start != nullptr) return CloneState(*start);
  std::unique_ptr<SequenceState> state = model.NewState();
  if (state == nullptr) return OutOfStateMemory("creating a sequence state");
  return state;
}

}  // namespace hgeval
