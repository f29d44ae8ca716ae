#include "engine/tools/cli_flags.h"

#include <cerrno>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace hgeval::tools {

void CliFlags::AddValue(const std::string& name, const std::string& help,
                        const std::string& fallback, bool repeatable) {
  order_.push_back(name);
  Flag& f = flags_[name];
  f.help = help;
  f.fallback = fallback;
  f.takes_value = true;
  f.repeatable = repeatable;
}

void CliFlags::AddSwitch(const std::string& name, const std::string& help) {
  order_.push_back(name);
  Flag& f = flags_[name];
  f.help = help;
  f.takes_value = false;
}

absl::Status CliFlags::Parse(int argc, char** argv, int first) {
  bool only_positional = false;
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (only_positional || arg.size() < 2 || arg.rfind("--", 0) != 0) {
      positional_.push_back(arg);
      continue;
    }
    if (arg == "--") {
      only_positional = true;
      continue;
    }
    std::string name = arg.substr(2);
    std::optional<std::string> value;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    auto it = flags_.find(name);
    if (it == flags_.end()) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
    }
    Flag& flag = it->second;
    if (!flag.takes_value) {
      if (value.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat("--", name, " takes no value"));
      }
      flag.seen = true;
      continue;
    }
    if (!value.has_value()) {
      if (i + 1 >= argc) {
        return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
      }
      value = argv[++i];
    }
    if (flag.seen && !flag.repeatable) flag.values.clear();
    flag.values.push_back(*value);
    flag.seen = true;
  }
  return absl::OkStatus();
}

bool CliFlags::Has(const std::string& name) const {
  auto it = flags_.find(name);
  return it != flags_.end() && it->second.seen;
}

bool CliFlags::Switch(const std::string& name) const { return Has(name); }

std::string CliFlags::Value(const std::string& name) const {
  auto it = flags_.find(name);
  if (it == flags_.end()) return "";
  return it->second.values.empty() ? it->second.fallback : it->second.values.back();
}

std::vector<std::string> CliFlags::Values(const std::string& name) const {
  auto it = flags_.find(name);
  return it == flags_.end() ? std::vector<std::string>() : it->second.values;
}

absl::StatusOr<int64_t> CliFlags::Int(const std::string& name) const {
  int64_t v = 0;
  if (!absl::SimpleAtoi(Value(name), &v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, " must be an integer, got '", Value(name), "'"));
  }
  return v;
}

absl::StatusOr<double> CliFlags::Double(const std::string& name) const {
  double v = 0;
  if (!absl::SimpleAtod(Value(name), &v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, " must be a number, got '", Value(name), "'"));
  }
  return v;
}

std::string CliFlags::Help() const {
  std::string out;
  for (const std::string& name : order_) {
    const Flag& f = flags_.at(name);
    std::string left = absl::StrCat("  --", name, f.takes_value ? " VALUE" : "");
    if (left.size() < 26) left.resize(26, ' ');
    absl::StrAppend(&out, left, " ", f.help);
    if (f.takes_value && !f.fallback.empty()) absl::StrAppend(&out, " (default: ", f.fallback, ")");
    if (f.repeatable) absl::StrAppend(&out, " (repeatable)");
    absl::StrAppend(&out, "\n");
  }
  return out;
}

}  // namespace hgeval::tools
