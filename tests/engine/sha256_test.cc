// engine/util/sha256 (libcrypto): published SHA-256 vectors, streaming == one-shot, and the
// tokenizer content hashes pinned to the values the hand-written SHA-256 gave before the
// move to libcrypto (they are result-store keys, so they must never change).
#include "engine/util/sha256.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "absl/strings/escaping.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

// FIPS 180-2 appendix B and the NIST example vectors.
TEST(Sha256Test, KnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // One million 'a' (1 MB).
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256Test, StreamingEqualsOneShotForAnySplit) {
  const std::string million(1000000, 'a');
  const std::string_view whole(million);
  // Splits that fall inside, at and across the 64-byte block boundary.
  for (size_t first : {size_t{0}, size_t{1}, size_t{55}, size_t{63}, size_t{64}, size_t{333},
                       size_t{999999}, size_t{1000000}}) {
    Sha256 split;
    split.Update(whole.substr(0, first));
    split.Update(whole.substr(first));
    EXPECT_EQ(split.HexDigest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        << "split at " << first;
  }
}

TEST(Sha256Test, RawDigestIsTheHexDigestsBytes) {
  const auto raw = Sha256Digest("abc");
  EXPECT_EQ(absl::BytesToHexString(
                absl::string_view(reinterpret_cast<const char*>(raw.data()), raw.size())),
            Sha256Hex("abc"));
  Sha256 moved_from;
  moved_from.Update("ab");
  Sha256 moved = std::move(moved_from);
  moved.Update("c");
  EXPECT_EQ(moved.HexDigest(), Sha256Hex("abc"));
}

// Values computed on main at 78ffb25 (engine/tokenizer/sha256.cc, the hand-written SHA-256).
TEST(Sha256Test, TokenizerContentHashesAreUnchanged) {
  struct Pinned {
    const char* path;
    const char* hash;
  };
  for (const Pinned& p : {
           Pinned{"data/tokenizers/mistral-7b-v0.1/tokenizer.json",
                  "040b923b01ce291742923a4842a209c7d1ab1d17f44a012ccf231eeb31441440"},
           Pinned{"data/tokenizers/mistral-7b-v0.1/tokenizer.model",
                  "650d47eff7ab4bd0bbba2b8760a8c3c431b627119c26b771dfa0d0543ef46ed0"},
           Pinned{"data/tokenizers/llama-2",
                  "12608022afc96a79d6688b12cfdbf341cc675b3fd3015e6b97647fb28756006c"},
           Pinned{"data/tokenizers/llama-2/tokenizer.model",
                  "3285d54da5daf6169f3c1df1436b6c085a848c0802b69ad480a457f91ff6044c"},
           Pinned{"data/tokenizers/gpt2",
                  "5e020136145d14812fe712da6f96c7b8f64461536e816037723e2ffdcc5898fb"},
           Pinned{"data/tokenizers/cl100k_base/cl100k_base.tiktoken",
                  "6d5e7e3452e6e6087345b0b41776791f0a1c35f9b8c2b664cd4e14981032c6bb"},
           Pinned{"data/models/stories260K/tok512.bin",
                  "8e022b15b21d071b386947146223c2e6f2504e3fbb1f99523e42741fd5bfc525"},
       }) {
    auto tokenizer = LoadTokenizer(testing::SourcePath(p.path));
    ASSERT_TRUE(tokenizer.ok()) << p.path << ": " << tokenizer.status();
    EXPECT_EQ((*tokenizer)->ContentHash(), p.hash) << p.path;
  }
}

}  // namespace
}  // namespace hgeval
