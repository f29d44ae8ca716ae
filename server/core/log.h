// Structured logs: one line per event on stderr, `ts=... event=... key=value ...`.
// Values with spaces, quotes or '=' are double-quoted with escapes.
#ifndef HGEVAL_SERVER_CORE_LOG_H_
#define HGEVAL_SERVER_CORE_LOG_H_

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"

namespace hgeval::server {

using LogField = std::pair<std::string_view, std::string>;

// Writes `ts=<RFC3339> level=<level> event=<event> k=v ...` atomically.
void LogEvent(std::string_view level, std::string_view event,
              std::initializer_list<LogField> fields = {});

inline void LogInfo(std::string_view event, std::initializer_list<LogField> fields = {}) {
  LogEvent("info", event, fields);
}
inline void LogWarning(std::string_view event, std::initializer_list<LogField> fields = {}) {
  LogEvent("warn", event, fields);
}
inline void LogError(std::string_view event, std::initializer_list<LogField> fields = {}) {
  LogEvent("error", event, fields);
}

// Disables all logging (tests, benchmarks).
void SetLoggingEnabled(bool enabled);

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_CORE_LOG_H_
