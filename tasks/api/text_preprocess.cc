#include "tasks/api/text_preprocess.h"

#include <cctype>

#include "engine/tokenizer/utf8.h"
#include "metrics/text_counts.h"

namespace hgeval::tasks {
namespace {

// Bytes of text without its trailing Python whitespace.
size_t EndWithoutTrailingSpace(std::string_view text) {
  size_t end = 0;
  size_t i = 0;
  while (i < text.size()) {
    if (!utf8::IsPythonWhitespace(utf8::NextCodePointLenient(text, &i))) end = i;
  }
  return end;
}

// re.sub(open \s*([^close]*?)\s* close, open \1 close): removes whitespace just inside
// each open...close pair (the first close after each open).
std::string SqueezeInside(std::string_view text, char open, char close) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == open) {
      const size_t j = text.find(close, i + 1);
      if (j != std::string_view::npos) {
        out += open;
        out += PyStrip(text.substr(i + 1, j - i - 1));
        out += close;
        i = j + 1;
        continue;
      }
    }
    out += text[i];
    ++i;
  }
  return out;
}

}  // namespace

std::string PyReplace(std::string_view text, std::string_view from, std::string_view to) {
  if (from.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (true) {
    const size_t j = text.find(from, i);
    if (j == std::string_view::npos) break;
    out.append(text.substr(i, j - i));
    out.append(to);
    i = j + from.size();
  }
  out.append(text.substr(i));
  return out;
}

std::string PyStrip(std::string_view text) { return std::string(metrics::PythonStrip(text)); }

std::string PyRstrip(std::string_view text) {
  return std::string(text.substr(0, EndWithoutTrailingSpace(text)));
}

std::string PyCapitalizeAscii(std::string_view text) {
  std::string out(text);
  for (size_t i = 0; i < out.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(out[i]);
    if (c < 0x80) out[i] = static_cast<char>(i == 0 ? std::toupper(c) : std::tolower(c));
  }
  return out;
}

std::string HellaswagPreprocess(std::string_view text) {
  std::string s = PyStrip(text);
  s = PyReplace(s, " [title]", ". ");
  // re.sub("\\[.*?\\]", "", s): '.' does not match "\n".
  std::string cleaned;
  cleaned.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '[') {
      size_t j = i + 1;
      while (j < s.size() && s[j] != ']' && s[j] != '\n') ++j;
      if (j < s.size() && s[j] == ']') {
        i = j + 1;
        continue;
      }
    }
    cleaned += s[i];
    ++i;
  }
  return PyReplace(cleaned, "  ", " ");
}

std::string HellaswagQueryFromJoined(std::string_view joined_query) {
  std::string query(joined_query);
  const size_t label_end = query.find(": ");
  const size_t ctx_start = label_end == std::string::npos ? 0 : label_end + 2;
  const size_t last_stop = query.rfind(". ");
  if (last_stop != std::string::npos && last_stop >= ctx_start) {
    const size_t b = last_stop + 2;
    if (b < query.size() && query[b] >= 'a' && query[b] <= 'z') {
      query = query.substr(0, b) + PyCapitalizeAscii(query.substr(b));
    }
  }
  return HellaswagPreprocess(query);
}

std::string WikitextDetokenize(std::string_view page) {
  std::string s(page);
  // contractions
  s = PyReplace(s, "s '", "s'");
  // re.sub(r"/' [0-9]/", r"/'[0-9]/", s): only the literal slashes match.
  {
    std::string out;
    size_t i = 0;
    while (i < s.size()) {
      if (i + 5 <= s.size() && s.compare(i, 3, "/' ") == 0 &&
          std::isdigit(static_cast<unsigned char>(s[i + 3])) && s[i + 4] == '/') {
        out += "/'[0-9]/";
        i += 5;
      } else {
        out += s[i++];
      }
    }
    s = out;
  }
  // number separators
  s = PyReplace(s, " @-@ ", "-");
  s = PyReplace(s, " @,@ ", ",");
  s = PyReplace(s, " @.@ ", ".");
  // punctuation
  s = PyReplace(s, " : ", ": ");
  s = PyReplace(s, " ; ", "; ");
  s = PyReplace(s, " . ", ". ");
  s = PyReplace(s, " ! ", "! ");
  s = PyReplace(s, " ? ", "? ");
  s = PyReplace(s, " , ", ", ");
  // double brackets
  s = SqueezeInside(s, '(', ')');
  s = SqueezeInside(s, '[', ']');
  s = SqueezeInside(s, '{', '}');
  s = SqueezeInside(s, '"', '"');
  s = SqueezeInside(s, '\'', '\'');
  // miscellaneous
  s = PyReplace(s, "= = = =", "====");
  s = PyReplace(s, "= = =", "===");
  s = PyReplace(s, "= =", "==");
  s = PyReplace(s, " \xC2\xB0 ", "\xC2\xB0");
  s = PyReplace(s, " \n", "\n");
  s = PyReplace(s, "\n ", "\n");
  s = PyReplace(s, " N ", " 1 ");
  s = PyReplace(s, " 's", "'s");
  return s;
}

}  // namespace hgeval::tasks
