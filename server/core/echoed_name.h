// Names a client sent, as status messages quote them: a megabyte-long model name or job
// id is echoed back cut short (the message goes into gRPC metadata and every log line).
#ifndef HGEVAL_SERVER_CORE_ECHOED_NAME_H_
#define HGEVAL_SERVER_CORE_ECHOED_NAME_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"

namespace hgeval::server {

inline constexpr size_t kMaxEchoedNameBytes = 128;

// `name` itself when it is at most kMaxEchoedNameBytes long; else its first bytes (cut
// before a UTF-8 continuation byte) followed by "... (N bytes)".
inline std::string EchoedName(std::string_view name) {
  if (name.size() <= kMaxEchoedNameBytes) return std::string(name);
  size_t keep = kMaxEchoedNameBytes;
  while (keep > 0 && (static_cast<unsigned char>(name[keep]) & 0xC0) == 0x80) --keep;
  return absl::StrCat(std::string(name.substr(0, keep)), "... (", name.size(), " bytes)");
}

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_CORE_ECHOED_NAME_H_
