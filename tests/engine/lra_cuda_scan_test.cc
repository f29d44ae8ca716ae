// The CUDA LRA scans' per-line code (engine/cuda/lra_scan.h, the very functions the
// kernels run) over the pass tables of several packed documents
// (engine/cuda/lra_pass_tables.h), run on the host against direct sums written here: a
// wrong row, column, direction or document offset shows without a GPU. Header-only code,
// so this runs in every build.
#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <random>
#include <vector>

#include "engine/cuda/lra_pass_tables.h"
#include "engine/cuda/lra_scan.h"
#include "gtest/gtest.h"

namespace hgeval::cuda {
namespace {

std::vector<float> Random(size_t n, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// The positions (document-local, in scan order) of every line through position t of a
// document of t_len positions: the sequence in 1-D; t's row and t's column in 2-D.
std::vector<std::vector<int>> LinesThrough(const LraClassifierConfig& config, int t_len, int t) {
  std::vector<std::vector<int>> lines;
  if (!config.two_d) {
    lines.emplace_back();
    for (int s = 0; s < t_len; ++s) lines.back().push_back(s);
    return lines;
  }
  const int w = static_cast<int>(config.image_width), h = static_cast<int>(config.image_height);
  lines.emplace_back();
  for (int x = 0; x < w; ++x) lines.back().push_back(t / w * w + x);
  lines.emplace_back();
  for (int y = 0; y < h; ++y) lines.back().push_back(y * w + t % w);
  return lines;
}

struct Packed {
  LraClassifierConfig config;
  std::vector<LraDocument> docs;
  std::vector<const LraDocument*> pointers;
};

Packed MakeDocs(bool two_d, const std::vector<int>& lengths, const std::vector<int>& pools) {
  Packed p;
  p.config.embedding_encoder = true;
  p.config.vocab_size = 5;
  p.config.two_d = two_d;
  p.config.image_height = 3;
  p.config.image_width = 4;
  for (size_t i = 0; i < lengths.size(); ++i) {
    p.docs.push_back({std::vector<int32_t>(lengths[i], 1), {}, pools[i]});
  }
  for (const LraDocument& doc : p.docs) p.pointers.push_back(&doc);
  return p;
}

void CheckTables(const Packed& p, const LraPassTables& t, int32_t first) {
  int32_t row = 0;
  for (size_t j = 0; j < p.docs.size(); ++j) {
    const int32_t t_len = static_cast<int32_t>(p.docs[j].tokens.size());
    EXPECT_EQ(t.row0[j], row);
    EXPECT_EQ(t.doc_index[j], first + static_cast<int32_t>(j));
    EXPECT_EQ(t.pool[j], p.docs[j].pool_length > 0 ? p.docs[j].pool_length : t_len);
    for (int32_t s = 0; s < t_len; ++s) EXPECT_EQ(t.position[row + s], s);
    row += t_len;
  }
  EXPECT_EQ(t.rows, row);
  EXPECT_EQ(t.num_parts, p.config.two_d ? 4 : 2);
}

// Hgrn2: every line, direction and channel through LraHgrn2ScanColumn, parts summed in
// order, against y_t[ch] = Σ_lines Σ_dir Σ_a q_t[a] Σ_{s before or at t} (Π gates) k_s[a] v_s[b].
void CheckHgrn2(const Packed& p, int d, int e) {
  const LraPassTables tables = BuildLraPassTables(p.config, p.pointers, 7);
  CheckTables(p, tables, 7);
  const LraScanLines lines = tables.HostLines();
  const int rows = static_cast<int>(tables.rows);
  std::mt19937 rng(3);
  const std::vector<float> gate = Random(rows * d, rng, 0.5f, 0.99f);
  const std::vector<float> scale = Random(rows * d, rng, 0.01f, 0.5f);
  const std::vector<float> input = Random(rows * d, rng, -1.0f, 1.0f);
  const std::vector<float> out_gate = Random(rows * d, rng, 0.0f, 1.0f);
  std::vector<float> parts(tables.num_parts * rows * d, std::numeric_limits<float>::quiet_NaN());
  for (int line = 0; line < lines.num_lines; ++line) {
    for (int dir = 0; dir < 2; ++dir) {
      for (int ch = 0; ch < d; ++ch) {
        LraHgrn2ScanColumn<8>(gate.data(), scale.data(), input.data(), out_gate.data(), rows, d, e,
                              lines, line, dir, ch, parts.data());
      }
    }
  }
  for (size_t j = 0; j < p.docs.size(); ++j) {
    const int t_len = static_cast<int>(p.docs[j].tokens.size());
    const int base = tables.row0[j];
    for (int t = 0; t < t_len; ++t) {
      for (int ch = 0; ch < d; ++ch) {
        const int head0 = ch / e * e;
        double expected = 0.0;
        for (const std::vector<int>& line : LinesThrough(p.config, t_len, t)) {
          const int at = static_cast<int>(std::find(line.begin(), line.end(), t) - line.begin());
          for (int dir = 0; dir < 2; ++dir) {
            for (int a = 0; a < e; ++a) {
              double state = 0.0;
              const int n = static_cast<int>(line.size());
              for (int i = 0; i < n; ++i) {
                const bool before = dir == 0 ? i <= at : i >= at;
                if (!before) continue;
                double term =
                    scale[(base + line[i]) * d + head0 + a] * input[(base + line[i]) * d + ch];
                const int lo = dir == 0 ? i + 1 : at, hi = dir == 0 ? at : i - 1;
                for (int r = lo; r <= hi; ++r) term *= gate[(base + line[r]) * d + head0 + a];
                state += term;
              }
              expected += out_gate[(base + t) * d + head0 + a] * state;
            }
          }
        }
        double got = 0.0;
        for (int part = 0; part < tables.num_parts; ++part) {
          got += parts[(static_cast<int64_t>(part) * rows + base + t) * d + ch];
        }
        EXPECT_NEAR(got, expected, 1e-5)
            << "document " << j << " position " << t << " channel " << ch;
      }
    }
  }
}

TEST(LraCudaScanTest, Hgrn2ScansOfPackedSequencesEqualDirectSums) {
  CheckHgrn2(MakeDocs(false, {1, 5, 9}, {0, 3, 0}), 6, 3);
}

TEST(LraCudaScanTest, Hgrn2FourDirectionScansOfPackedImagesEqualDirectSums) {
  CheckHgrn2(MakeDocs(true, {12, 12}, {0, 5}), 4, 2);
}

TEST(LraCudaScanTest, Hgrn1ScansOfPackedImagesEqualDirectComplexSums) {
  const Packed p = MakeDocs(true, {12, 12, 12}, {0, 0, 0});
  const int d = 3;
  const LraPassTables tables = BuildLraPassTables(p.config, p.pointers, 0);
  const LraScanLines lines = tables.HostLines();
  const int rows = static_cast<int>(tables.rows);
  std::mt19937 rng(5);
  const std::vector<float> gate = Random(rows * d, rng, 0.5f, 0.99f);
  const std::vector<float> scale = Random(rows * d, rng, 0.01f, 0.5f);
  const std::vector<float> input = Random(rows * 2 * d, rng, -1.0f, 1.0f);
  const std::vector<float> theta[2] = {Random(d, rng, -1.5f, 1.5f), Random(d, rng, -1.5f, 1.5f)};
  std::vector<float> parts(tables.num_parts * rows * 2 * d,
                           std::numeric_limits<float>::quiet_NaN());
  for (int line = 0; line < lines.num_lines; ++line) {
    for (int dir = 0; dir < 2; ++dir) {
      for (int c = 0; c < d; ++c) {
        LraHgrn1ScanChannel(gate.data(), scale.data(), input.data(), theta[0].data(),
                            theta[1].data(), rows, d, lines, line, dir, c, parts.data());
      }
    }
  }
  for (size_t j = 0; j < p.docs.size(); ++j) {
    const int base = tables.row0[j];
    for (int t = 0; t < 12; ++t) {
      for (int c = 0; c < d; ++c) {
        std::complex<double> expected = 0.0;
        for (const std::vector<int>& line : LinesThrough(p.config, 12, t)) {
          const int at = static_cast<int>(std::find(line.begin(), line.end(), t) - line.begin());
          for (int dir = 0; dir < 2; ++dir) {
            for (int i = 0; i < static_cast<int>(line.size()); ++i) {
              if (dir == 0 ? i > at : i < at) continue;
              const int s = base + line[i];
              std::complex<double> term(scale[s * d + c] * input[s * 2 * d + 2 * c],
                                        scale[s * d + c] * input[s * 2 * d + 2 * c + 1]);
              const int lo = dir == 0 ? i + 1 : at, hi = dir == 0 ? at : i - 1;
              for (int r = lo; r <= hi; ++r) {
                term *= std::polar<double>(gate[(base + line[r]) * d + c], theta[dir][c]);
              }
              expected += term;
            }
          }
        }
        double re = 0.0, im = 0.0;
        for (int part = 0; part < tables.num_parts; ++part) {
          const int64_t at = (static_cast<int64_t>(part) * rows + base + t) * 2 * d;
          re += parts[at + c];
          im += parts[at + d + c];
        }
        EXPECT_NEAR(re, expected.real(), 1e-5) << j << " " << t << " " << c;
        EXPECT_NEAR(im, expected.imag(), 1e-5) << j << " " << t << " " << c;
      }
    }
  }
}

TEST(LraCudaScanTest, MeanPoolAveragesEachDocumentsPooledPositions) {
  const Packed p = MakeDocs(false, {4, 1, 6}, {2, 0, 6});
  const int d = 3;
  const LraPassTables tables = BuildLraPassTables(p.config, p.pointers, 2);
  std::mt19937 rng(9);
  const std::vector<float> x = Random(tables.rows * d, rng, -1.0f, 1.0f);
  std::vector<float> pooled(5 * d, std::numeric_limits<float>::quiet_NaN());
  for (int j = 0; j < 3; ++j) {
    for (int c = 0; c < d; ++c) {
      LraMeanPoolChannel(x.data(), d, tables.row0.data(), tables.pool.data(),
                         tables.doc_index.data(), j, c, pooled.data());
    }
  }
  const int pool[3] = {2, 1, 6};
  for (int j = 0; j < 3; ++j) {
    for (int c = 0; c < d; ++c) {
      double sum = 0.0;
      for (int r = 0; r < pool[j]; ++r) sum += x[(tables.row0[j] + r) * d + c];
      EXPECT_EQ(pooled[(2 + j) * d + c], static_cast<float>(sum / pool[j])) << j << " " << c;
    }
  }
  for (int c = 0; c < 2 * d; ++c) EXPECT_TRUE(std::isnan(pooled[c])) << "rows of other calls";
}

}  // namespace
}  // namespace hgeval::cuda
