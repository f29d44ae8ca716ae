// A small command-line parser for hgeval-engine: `--name value`, `--name=value`, boolean
// `--name`, and positional arguments; every flag must be declared, so a typo is an error.
#ifndef HGEVAL_ENGINE_TOOLS_CLI_FLAGS_H_
#define HGEVAL_ENGINE_TOOLS_CLI_FLAGS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace hgeval::tools {

class CliFlags {
 public:
  // Declares a flag that takes a value (repeatable ones keep every value).
  void AddValue(const std::string& name, const std::string& help, const std::string& fallback = "",
                bool repeatable = false);
  // Declares a flag without a value.
  void AddSwitch(const std::string& name, const std::string& help);

  // Parses argv[first..argc). Unknown flags and missing values are InvalidArgument errors.
  absl::Status Parse(int argc, char** argv, int first);

  bool Has(const std::string& name) const;  // given on the command line
  bool Switch(const std::string& name) const;
  std::string Value(const std::string& name) const;  // last value, or the fallback
  std::vector<std::string> Values(const std::string& name) const;
  absl::StatusOr<int64_t> Int(const std::string& name) const;
  absl::StatusOr<double> Double(const std::string& name) const;
  const std::vector<std::string>& positional() const { return positional_; }

  // "  --name VALUE  help (default: x)" lines, in declaration order.
  std::string Help() const;

 private:
  struct Flag {
    std::string help;
    std::string fallback;
    bool takes_value = true;
    bool repeatable = false;
    std::vector<std::string> values;
    bool seen = false;
  };
  std::vector<std::string> order_;
  std::map<std::string, Flag> flags_;
  std::vector<std::string> positional_;
};

}  // namespace hgeval::tools

#endif  // HGEVAL_ENGINE_TOOLS_CLI_FLAGS_H_
