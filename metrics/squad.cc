#include "metrics/squad.h"

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/utf8.h"
#include "metrics/text_counts.h"

namespace hgeval::metrics {
namespace {

char32_t ToLower(char32_t cp) {
  if (cp >= 'A' && cp <= 'Z') return cp + 32;
  if ((cp >= 0xC0 && cp <= 0xDE && cp != 0xD7)) return cp + 32;  // Latin-1
  if (cp == 0x212A) return 'k';                                  // Kelvin sign
  if (cp == 0x178) return 0xFF;                                  // Y diaeresis
  if (cp >= 0x100 && cp <= 0x17F && cp != 0x130 && cp != 0x131 && cp != 0x138 && cp != 0x149 &&
      cp != 0x17F) {
    // Latin Extended-A pairs capitals with the next code point, except 0x139..0x148 and
    // 0x179..0x17E where the capital is odd.
    const bool odd_capitals = (cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E);
    if (odd_capitals ? (cp % 2 == 1) : (cp % 2 == 0)) return cp + 1;
    return cp;
  }
  if (cp >= 0x391 && cp <= 0x3AB && cp != 0x3A2) return cp + 32;  // Greek
  if (cp >= 0x410 && cp <= 0x42F) return cp + 32;                 // Cyrillic
  if (cp >= 0x400 && cp <= 0x40F) return cp + 80;
  return cp;
}

bool IsAsciiPunctuation(char32_t cp) {
  return (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60) ||
         (cp >= 0x7B && cp <= 0x7E);
}

// Python's \w on str: letters, digits and "_". Outside ASCII, symbols and punctuation
// of the common blocks are not word characters; everything else is taken as a letter.
bool IsWordChar(char32_t cp) {
  if (cp < 0x80) {
    return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9') ||
           cp == '_';
  }
  if (utf8::IsPythonWhitespace(cp)) return false;
  if (cp >= 0x80 && cp <= 0xBF) {
    return cp == 0xAA || cp == 0xB2 || cp == 0xB3 || cp == 0xB5 || cp == 0xB9 || cp == 0xBA ||
           (cp >= 0xBC && cp <= 0xBE);
  }
  if (cp == 0xD7 || cp == 0xF7) return false;
  if (cp >= 0x300 && cp <= 0x36F) return false;      // combining marks are not alphanumeric
  if (cp >= 0x2000 && cp <= 0x2BFF) return false;    // punctuation, symbols, arrows, ...
  if (cp >= 0x3000 && cp <= 0x303F) return false;    // CJK symbols and punctuation
  if (cp >= 0xFF01 && cp <= 0xFF0F) return false;    // full-width punctuation
  if (cp >= 0xE000 && cp <= 0xF8FF) return false;    // private use
  if (cp >= 0xFE00 && cp <= 0xFE0F) return false;    // variation selectors
  if (cp >= 0x1F000 && cp <= 0x1FAFF) return false;  // emoji, pictographs, game symbols
  return true;
}

std::vector<std::string> NormalizedTokens(std::string_view text) {
  return PythonSplit(SquadNormalize(text));
}

}  // namespace

std::string SquadNormalize(std::string_view text) {
  // lower(), then delete ASCII punctuation (string.punctuation).
  std::vector<char32_t> cps;
  for (size_t i = 0; i < text.size();) {
    const char32_t cp = utf8::NextCodePointLenient(text, &i);
    if (cp == 0x130) {  // Python: "\u0130".lower() == "i\u0307"
      cps.push_back('i');
      cps.push_back(0x307);
      continue;
    }
    const char32_t lower = ToLower(cp);
    if (!IsAsciiPunctuation(lower)) cps.push_back(lower);
  }
  // re.sub(r"\b(a|an|the)\b", " ", ...): the alternatives are tried left to right at each
  // position, and a match needs a word boundary before and after.
  std::string spaced;
  const std::u32string_view articles[] = {U"a", U"an", U"the"};
  for (size_t i = 0; i < cps.size();) {
    const bool boundary_before = i == 0 || !IsWordChar(cps[i - 1]);
    size_t matched = 0;
    if (boundary_before) {
      for (const auto& article : articles) {
        const size_t n = article.size();
        if (i + n > cps.size()) continue;
        if (!std::equal(article.begin(), article.end(), cps.begin() + i)) continue;
        if (i + n < cps.size() && IsWordChar(cps[i + n])) continue;
        matched = n;
        break;
      }
    }
    if (matched > 0) {
      spaced.push_back(' ');
      i += matched;
    } else {
      utf8::Append(cps[i], &spaced);
      ++i;
    }
  }
  // " ".join(text.split()).
  std::string out;
  for (const std::string& word : PythonSplit(spaced)) {
    if (!out.empty()) out.push_back(' ');
    out += word;
  }
  return out;
}

double SquadF1(std::string_view prediction, std::string_view reference) {
  const std::vector<std::string> predicted = NormalizedTokens(prediction);
  const std::vector<std::string> expected = NormalizedTokens(reference);
  std::map<std::string, int> expected_counts;
  for (const auto& token : expected) ++expected_counts[token];
  int common = 0;
  for (const auto& token : predicted) {
    auto it = expected_counts.find(token);
    if (it != expected_counts.end() && it->second > 0) {
      ++common;
      --it->second;
    }
  }
  if (common == 0) return 0.0;
  const double precision = static_cast<double>(common) / static_cast<double>(predicted.size());
  const double recall = static_cast<double>(common) / static_cast<double>(expected.size());
  return 2 * precision * recall / (precision + recall);
}

bool SquadExactMatch(std::string_view prediction, std::string_view reference) {
  return SquadNormalize(prediction) == SquadNormalize(reference);
}

double SquadF1MaxOverReferences(std::string_view prediction,
                                absl::Span<const std::string> references) {
  double best = 0.0;
  for (const std::string& reference : references) {
    best = std::max(best, SquadF1(prediction, reference));
  }
  return best;
}

double SquadExactMatchMaxOverReferences(std::string_view prediction,
                                        absl::Span<const std::string> references) {
  for (const std::string& reference : references) {
    if (SquadExactMatch(prediction, reference)) return 1.0;
  }
  return 0.0;
}

}  // namespace hgeval::metrics
