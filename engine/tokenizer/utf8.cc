#include "engine/tokenizer/utf8.h"

namespace hgeval::utf8 {
namespace {

// Valid range of the second byte for a given lead byte (Unicode Table 3-7).
bool SecondByteOk(unsigned char lead, unsigned char b) {
  switch (lead) {
    case 0xE0:
      return b >= 0xA0 && b <= 0xBF;
    case 0xED:
      return b >= 0x80 && b <= 0x9F;
    case 0xF0:
      return b >= 0x90 && b <= 0xBF;
    case 0xF4:
      return b >= 0x80 && b <= 0x8F;
    default:
      return b >= 0x80 && b <= 0xBF;
  }
}

// Expected total length for a lead byte, 0 if it can never start a sequence.
size_t LeadLength(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

bool IsContinuation(unsigned char b) { return (b & 0xC0) == 0x80; }

// Length of the maximal prefix of a well-formed sequence at pos (>= 1 even when invalid
// lead byte, so callers always make progress).
size_t MaximalSubpart(std::string_view text, size_t pos) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  const size_t need = LeadLength(lead);
  if (need <= 1) return 1;
  size_t have = 1;
  while (have < need && pos + have < text.size()) {
    const auto b = static_cast<unsigned char>(text[pos + have]);
    const bool ok = have == 1 ? SecondByteOk(lead, b) : IsContinuation(b);
    if (!ok) break;
    ++have;
  }
  return have;
}

}  // namespace

size_t SequenceLength(std::string_view text, size_t pos) {
  if (pos >= text.size()) return 0;
  const auto lead = static_cast<unsigned char>(text[pos]);
  const size_t need = LeadLength(lead);
  if (need == 0) return 0;
  if (need == 1) return 1;
  if (pos + need > text.size()) return 0;
  if (!SecondByteOk(lead, static_cast<unsigned char>(text[pos + 1]))) return 0;
  for (size_t i = 2; i < need; ++i) {
    if (!IsContinuation(static_cast<unsigned char>(text[pos + i]))) return 0;
  }
  return need;
}

size_t FirstInvalidOffset(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    // Fast path for ASCII runs.
    if (static_cast<unsigned char>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const size_t n = SequenceLength(text, pos);
    if (n == 0) return pos;
    pos += n;
  }
  return std::string_view::npos;
}

bool IsValid(std::string_view text) { return FirstInvalidOffset(text) == std::string_view::npos; }

char32_t DecodeAt(std::string_view text, size_t pos) {
  const size_t length = SequenceLength(text, pos);
  if (length == 0) return 0xFFFD;
  const auto b0 = static_cast<unsigned char>(text[pos]);
  if (b0 < 0x80) return b0;
  auto cont = [&](size_t i) { return static_cast<char32_t>(text[pos + i] & 0x3F); };
  if (b0 < 0xE0) return (static_cast<char32_t>(b0 & 0x1F) << 6) | cont(1);
  if (b0 < 0xF0) return (static_cast<char32_t>(b0 & 0x0F) << 12) | (cont(1) << 6) | cont(2);
  return (static_cast<char32_t>(b0 & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3);
}

void Append(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string Encode(char32_t cp) {
  std::string s;
  Append(cp, &s);
  return s;
}

std::string ToValidLossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t pos = 0;
  while (pos < bytes.size()) {
    const size_t n = SequenceLength(bytes, pos);
    if (n > 0) {
      out.append(bytes.substr(pos, n));
      pos += n;
    } else {
      out.append(kReplacementChar);
      pos += MaximalSubpart(bytes, pos);
    }
  }
  return out;
}

size_t IncompleteTailLength(std::string_view text) {
  // A sequence is at most 4 bytes: look back at most 3 bytes for its lead byte.
  const size_t n = text.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const size_t pos = n - back;
    const auto b = static_cast<unsigned char>(text[pos]);
    if (IsContinuation(b)) continue;
    const size_t need = LeadLength(b);
    if (need > back && MaximalSubpart(text, pos) == back) return back;
    return 0;
  }
  return 0;
}

char32_t NextCodePointLenient(std::string_view text, size_t* pos) {
  const unsigned char c = static_cast<unsigned char>(text[*pos]);
  size_t len = 1;
  char32_t cp = c;
  if (c >= 0xF0 && c < 0xF8) {
    len = 4;
    cp = c & 0x07;
  } else if (c >= 0xE0 && c < 0xF0) {
    len = 3;
    cp = c & 0x0F;
  } else if (c >= 0xC2 && c < 0xE0) {
    len = 2;
    cp = c & 0x1F;
  }
  if (len == 1 || *pos + len > text.size()) {
    ++*pos;
    return c < 0x80 ? c : 0xFFFD;
  }
  for (size_t k = 1; k < len; ++k) {
    const unsigned char cc = static_cast<unsigned char>(text[*pos + k]);
    if ((cc & 0xC0) != 0x80) {
      ++*pos;
      return 0xFFFD;
    }
    cp = (cp << 6) | (cc & 0x3F);
  }
  *pos += len;
  return cp;
}

bool IsWhiteSpace(char32_t cp) {
  if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
  switch (cp) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

bool IsPythonWhitespace(char32_t cp) { return IsWhiteSpace(cp) || (cp >= 0x1C && cp <= 0x1F); }

bool ParseByteFallbackPiece(std::string_view piece, uint8_t* byte) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return false;
  int value = 0;
  for (int i = 3; i < 5; ++i) {
    const char c = piece[i];
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'A' && c <= 'F') {
      digit = c - 'A' + 10;
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else {
      return false;
    }
    value = value * 16 + digit;
  }
  *byte = static_cast<uint8_t>(value);
  return true;
}

}  // namespace hgeval::utf8
