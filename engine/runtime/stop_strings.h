// A generation's stop strings, shared rather than copied: a request is copied into every
// batch it joins, and a NIAH job gives each of its cells the same list, so a copy per
// request would multiply a large list by the cells in flight (issue 29: 6 MiB of stop
// strings grew a running job by ~480 MiB). Immutable once made.
#ifndef HGEVAL_ENGINE_RUNTIME_STOP_STRINGS_H_
#define HGEVAL_ENGINE_RUNTIME_STOP_STRINGS_H_

#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/types/span.h"

namespace hgeval {

class StopStrings {
 public:
  StopStrings() = default;
  // Implicit: a request's stop strings are assigned from a list.
  StopStrings(std::vector<std::string> strings)  // NOLINT(google-explicit-constructor)
      : strings_(strings.empty()
                     ? nullptr
                     : std::make_shared<const std::vector<std::string>>(std::move(strings))) {}

  StopStrings(std::initializer_list<std::string> strings)
      : StopStrings(std::vector<std::string>(strings)) {}

  const std::vector<std::string>& strings() const {
    static const std::vector<std::string> kNone;
    return strings_ == nullptr ? kNone : *strings_;
  }
  // Implicit, so the stop rules taking a span read it directly.
  operator absl::Span<const std::string>() const {  // NOLINT(google-explicit-constructor)
    return strings();
  }
  bool empty() const { return strings_ == nullptr; }
  size_t size() const { return strings().size(); }
  std::vector<std::string>::const_iterator begin() const { return strings().begin(); }
  std::vector<std::string>::const_iterator end() const { return strings().end(); }

 private:
  std::shared_ptr<const std::vector<std::string>> strings_;
};

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_RUNTIME_STOP_STRINGS_H_
