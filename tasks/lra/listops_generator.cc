#include "tasks/lra/listops_generator.h"

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <string_view>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "metrics/python_random.h"

namespace hgeval::tasks::lra {
namespace {

// LRA's OPERATORS list, in its order (random.choice indexes it).
constexpr std::array<std::string_view, 4> kOperators = {"[MIN", "[MAX", "[MED", "[SM"};
constexpr double kValueProbability = 0.25;  // LRA's VALUE_P: r > VALUE_P makes a leaf

int Apply(std::string_view op, std::vector<int>& args) {
  if (op == "[MIN") return *std::min_element(args.begin(), args.end());
  if (op == "[MAX") return *std::max_element(args.begin(), args.end());
  if (op == "[SM") {
    int sum = 0;
    for (int a : args) sum += a;
    return sum % 10;
  }
  // [MED: int(np.median(args)); the values are non-negative, so int() floors.
  std::sort(args.begin(), args.end());
  const size_t n = args.size();
  return n % 2 == 1 ? args[n / 2] : (args[n / 2 - 1] + args[n / 2]) / 2;
}

// generate_tree(depth, max_depth, max_args), writing the tree's string form
// (to_string(t, parens=True)) and returning its length and value. The draws are in LRA's
// order: random() (above max depth), then choice(VALUES) for a leaf, or randint(2,
// max_args), the children, and choice(OPERATORS) for an operator.
struct Tree {
  std::string text;
  int64_t length = 0;
  int value = 0;
};

Tree GenerateTree(int depth, const ListOpsGeneratorOptions& options, metrics::PythonRandom& rng) {
  const double r = depth < options.max_depth ? rng.Random() : 1.0;
  if (r > kValueProbability) {
    const int value = static_cast<int>(rng.RandBelow(10));
    return {absl::StrCat(value), 1, value};
  }
  const int64_t children = rng.RandInt(2, options.max_args);
  std::vector<Tree> args;
  int64_t length = 2;
  for (int64_t c = 0; c < children; ++c) {
    args.push_back(GenerateTree(depth + 1, options, rng));
    length += args.back().length;
  }
  const std::string_view op = kOperators[rng.RandBelow(kOperators.size())];
  // t = (op, v0); t = (t, v) for the rest; t = (t, END); each pair prints as "( a b )".
  std::string text = absl::StrCat("( ", std::string(op), " ", args[0].text, " )");
  for (size_t c = 1; c < args.size(); ++c) text = absl::StrCat("( ", text, " ", args[c].text, " )");
  text = absl::StrCat("( ", text, " ] )");
  std::vector<int> values;
  values.reserve(args.size());
  for (const Tree& arg : args) values.push_back(arg.value);
  return {std::move(text), length, Apply(op, values)};
}

}  // namespace

absl::StatusOr<std::vector<ListOpsExample>> GenerateListOps(const ListOpsGeneratorOptions& options,
                                                            int64_t count) {
  if (options.max_depth < 1 || options.max_args < 2 || options.max_args > 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat("ListOps generator: max_depth must be >= 1 and max_args in [2, 1000], got ",
                     options.max_depth, " and ", options.max_args));
  }
  if (options.max_length - options.min_length < 2 || count < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ListOps generator: no length lies strictly between min_length ", options.min_length,
        " and max_length ", options.max_length, " (or count ", count, " < 0)"));
  }
  metrics::PythonRandom rng(options.seed);
  absl::flat_hash_set<std::string> seen;
  std::vector<ListOpsExample> examples;
  while (static_cast<int64_t>(examples.size()) < count) {
    Tree tree = GenerateTree(1, options, rng);
    if (tree.length <= options.min_length || tree.length >= options.max_length) continue;
    if (!seen.insert(tree.text).second) continue;
    examples.push_back({std::move(tree.text), tree.value});
  }
  return examples;
}

absl::StatusOr<int> EvaluateListOps(const std::string& source) {
  // Parentheses only group; the value comes from operator tokens, digits and "]".
  struct Frame {
    std::string op;
    std::vector<int> args;
  };
  std::vector<Frame> stack;
  std::optional<int> result;
  int position = 0;
  for (absl::string_view piece : absl::StrSplit(source, ' ', absl::SkipEmpty())) {
    const std::string_view token(piece.data(), piece.size());
    ++position;
    if (token == "(" || token == ")") continue;
    const std::string where =
        absl::StrCat("ListOps expression token ", position, " '", std::string(token), "'");
    if (result.has_value()) return absl::InvalidArgumentError(where + ": after the end");
    if (std::find(kOperators.begin(), kOperators.end(), token) != kOperators.end()) {
      stack.push_back({std::string(token), {}});
    } else if (token == "]") {
      if (stack.empty()) return absl::InvalidArgumentError(where + ": ']' without an operator");
      if (stack.back().args.empty()) return absl::InvalidArgumentError(where + ": no arguments");
      const int value = Apply(stack.back().op, stack.back().args);
      stack.pop_back();
      if (stack.empty()) {
        result = value;
      } else {
        stack.back().args.push_back(value);
      }
    } else if (token.size() == 1 && token[0] >= '0' && token[0] <= '9') {
      if (stack.empty()) {
        result = token[0] - '0';
      } else {
        stack.back().args.push_back(token[0] - '0');
      }
    } else {
      return absl::InvalidArgumentError(where + ": not an operator, digit, '(', ')' or ']'");
    }
  }
  if (!stack.empty() || !result.has_value()) {
    return absl::InvalidArgumentError("ListOps expression ends before its last ']'");
  }
  return *result;
}

}  // namespace hgeval::tasks::lra
