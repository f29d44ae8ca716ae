#include "metrics/rouge_stemmer.h"

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hgeval::metrics {
namespace {

bool IsConsonant(std::string_view w, size_t i) {
  switch (w[i]) {
    case 'a':
    case 'e':
    case 'i':
    case 'o':
    case 'u':
      return false;
    case 'y':
      return i == 0 ? true : !IsConsonant(w, i - 1);
    default:
      return true;
  }
}

// m in Porter's [C](VC){m}[V]: the number of vowel->consonant transitions.
int Measure(std::string_view stem) {
  int m = 0;
  for (size_t i = 1; i < stem.size(); ++i) {
    if (!IsConsonant(stem, i - 1) && IsConsonant(stem, i)) ++m;
  }
  return m;
}

bool ContainsVowel(std::string_view stem) {
  for (size_t i = 0; i < stem.size(); ++i) {
    if (!IsConsonant(stem, i)) return true;
  }
  return false;
}

bool EndsDoubleConsonant(std::string_view w) {
  return w.size() >= 2 && w[w.size() - 1] == w[w.size() - 2] && IsConsonant(w, w.size() - 1);
}

// Porter's *o (consonant-vowel-consonant, last not w/x/y), plus NLTK's two-letter
// vowel-consonant case.
bool EndsCvc(std::string_view w) {
  const size_t n = w.size();
  if (n >= 3 && IsConsonant(w, n - 3) && !IsConsonant(w, n - 2) && IsConsonant(w, n - 1) &&
      w[n - 1] != 'w' && w[n - 1] != 'x' && w[n - 1] != 'y') {
    return true;
  }
  return n == 2 && !IsConsonant(w, 0) && IsConsonant(w, 1);
}

bool EndsWith(std::string_view w, std::string_view suffix) {
  return w.size() >= suffix.size() && w.substr(w.size() - suffix.size()) == suffix;
}

struct Rule {
  std::string_view suffix;  // "*d" means "ends with a double consonant"
  std::string replacement;
  std::function<bool(std::string_view stem)> condition;  // empty: unconditional
};

// The first rule whose suffix matches decides: it applies if its condition holds, and
// otherwise the word is returned unchanged (later rules are not tried).
std::string ApplyFirstMatchingRule(const std::string& word, const std::vector<Rule>& rules) {
  for (const Rule& rule : rules) {
    std::string_view stem;
    if (rule.suffix == "*d") {
      if (!EndsDoubleConsonant(word)) continue;
      stem = std::string_view(word).substr(0, word.size() - 2);
    } else if (EndsWith(word, rule.suffix)) {
      stem = std::string_view(word).substr(0, word.size() - rule.suffix.size());
    } else {
      continue;
    }
    if (!rule.condition || rule.condition(stem)) return std::string(stem) + rule.replacement;
    return word;
  }
  return word;
}

bool PositiveMeasure(std::string_view stem) { return Measure(stem) > 0; }
bool MeasureAboveOne(std::string_view stem) { return Measure(stem) > 1; }

std::string Step1a(const std::string& w) {
  if (EndsWith(w, "ies") && w.size() == 4) return w.substr(0, 1) + "ie";  // dies -> die
  return ApplyFirstMatchingRule(
      w, {{"sses", "ss", {}}, {"ies", "i", {}}, {"ss", "ss", {}}, {"s", "", {}}});
}

std::string Step1b(const std::string& w) {
  if (EndsWith(w, "ied")) {  // died -> die, spied -> spi
    return w.substr(0, w.size() - 3) + (w.size() == 4 ? "ie" : "i");
  }
  if (EndsWith(w, "eed")) {
    std::string_view stem = std::string_view(w).substr(0, w.size() - 3);
    return Measure(stem) > 0 ? std::string(stem) + "ee" : w;
  }
  std::string stem;
  bool removed = false;
  for (std::string_view suffix : {std::string_view("ed"), std::string_view("ing")}) {
    if (EndsWith(w, suffix)) {
      std::string candidate = w.substr(0, w.size() - suffix.size());
      if (ContainsVowel(candidate)) {
        stem = std::move(candidate);
        removed = true;
        break;
      }
    }
  }
  if (!removed) return w;
  const char last = stem.back();
  return ApplyFirstMatchingRule(
      stem, {{"at", "ate", {}},
             {"bl", "ble", {}},
             {"iz", "ize", {}},
             {"*d", std::string(1, last),
              [last](std::string_view) { return last != 'l' && last != 's' && last != 'z'; }},
             {"", "e", [](std::string_view s) { return Measure(s) == 1 && EndsCvc(s); }}});
}

std::string Step1c(const std::string& w) {
  return ApplyFirstMatchingRule(w, {{"y", "i", [](std::string_view s) {
                                       return s.size() > 1 && IsConsonant(s, s.size() - 1);
                                     }}});
}

std::string Step2(const std::string& w) {
  // NLTK applies alli -> al first and runs the result through step 2 again.
  if (EndsWith(w, "alli") && PositiveMeasure(std::string_view(w).substr(0, w.size() - 4))) {
    return Step2(w.substr(0, w.size() - 4) + "al");
  }
  return ApplyFirstMatchingRule(
      w, {{"ational", "ate", PositiveMeasure},
          {"tional", "tion", PositiveMeasure},
          {"enci", "ence", PositiveMeasure},
          {"anci", "ance", PositiveMeasure},
          {"izer", "ize", PositiveMeasure},
          {"bli", "ble", PositiveMeasure},
          {"alli", "al", PositiveMeasure},
          {"entli", "ent", PositiveMeasure},
          {"eli", "e", PositiveMeasure},
          {"ousli", "ous", PositiveMeasure},
          {"ization", "ize", PositiveMeasure},
          {"ation", "ate", PositiveMeasure},
          {"ator", "ate", PositiveMeasure},
          {"alism", "al", PositiveMeasure},
          {"iveness", "ive", PositiveMeasure},
          {"fulness", "ful", PositiveMeasure},
          {"ousness", "ous", PositiveMeasure},
          {"aliti", "al", PositiveMeasure},
          {"iviti", "ive", PositiveMeasure},
          {"biliti", "ble", PositiveMeasure},
          {"fulli", "ful", PositiveMeasure},
          // The 'l' of logi stays with the stem for the measure (geo-, theo-).
          {"logi", "log", [&w](std::string_view) {
             return PositiveMeasure(std::string_view(w).substr(0, w.size() - 3));
           }}});
}

std::string Step3(const std::string& w) {
  return ApplyFirstMatchingRule(w, {{"icate", "ic", PositiveMeasure},
                                    {"ative", "", PositiveMeasure},
                                    {"alize", "al", PositiveMeasure},
                                    {"iciti", "ic", PositiveMeasure},
                                    {"ical", "ic", PositiveMeasure},
                                    {"ful", "", PositiveMeasure},
                                    {"ness", "", PositiveMeasure}});
}

std::string Step4(const std::string& w) {
  return ApplyFirstMatchingRule(w, {{"al", "", MeasureAboveOne},
                                    {"ance", "", MeasureAboveOne},
                                    {"ence", "", MeasureAboveOne},
                                    {"er", "", MeasureAboveOne},
                                    {"ic", "", MeasureAboveOne},
                                    {"able", "", MeasureAboveOne},
                                    {"ible", "", MeasureAboveOne},
                                    {"ant", "", MeasureAboveOne},
                                    {"ement", "", MeasureAboveOne},
                                    {"ment", "", MeasureAboveOne},
                                    {"ent", "", MeasureAboveOne},
                                    {"ion", "",
                                     [](std::string_view s) {
                                       return Measure(s) > 1 && !s.empty() &&
                                              (s.back() == 's' || s.back() == 't');
                                     }},
                                    {"ou", "", MeasureAboveOne},
                                    {"ism", "", MeasureAboveOne},
                                    {"ate", "", MeasureAboveOne},
                                    {"iti", "", MeasureAboveOne},
                                    {"ous", "", MeasureAboveOne},
                                    {"ive", "", MeasureAboveOne},
                                    {"ize", "", MeasureAboveOne}});
}

std::string Step5a(const std::string& w) {
  if (!EndsWith(w, "e")) return w;
  std::string stem = w.substr(0, w.size() - 1);
  const int m = Measure(stem);
  if (m > 1 || (m == 1 && !EndsCvc(stem))) return stem;
  return w;
}

std::string Step5b(const std::string& w) {
  if (EndsWith(w, "ll") && Measure(std::string_view(w).substr(0, w.size() - 1)) > 1) {
    return w.substr(0, w.size() - 1);
  }
  return w;
}

}  // namespace

std::string PorterStem(std::string_view word) {
  static const std::pair<std::string_view, std::string_view> kIrregular[] = {
      {"sky", "sky"},        {"skies", "sky"},        {"dying", "die"},
      {"lying", "lie"},      {"tying", "tie"},        {"news", "news"},
      {"innings", "inning"}, {"inning", "inning"},    {"outings", "outing"},
      {"outing", "outing"},  {"cannings", "canning"}, {"canning", "canning"},
      {"howe", "howe"},      {"proceed", "proceed"},  {"exceed", "exceed"},
      {"succeed", "succeed"}};
  for (const auto& [form, stem] : kIrregular) {
    if (word == form) return std::string(stem);
  }
  std::string w(word);
  if (w.size() <= 2) return w;
  w = Step1a(w);
  w = Step1b(w);
  w = Step1c(w);
  w = Step2(w);
  w = Step3(w);
  w = Step4(w);
  w = Step5a(w);
  w = Step5b(w);
  return w;
}

}  // namespace hgeval::metrics
