// The host tables of one LRA pass (engine/cuda/lra_classifier.cc): documents packed one
// after another as rows; which rows each scan line visits, where each document starts,
// how many of its positions are pooled. Host only (the launchers take device copies).
#ifndef HGEVAL_ENGINE_CUDA_LRA_PASS_TABLES_H_
#define HGEVAL_ENGINE_CUDA_LRA_PASS_TABLES_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "engine/cuda/lra_scan.h"
#include "engine/model/lra_classifier.h"

namespace hgeval::cuda {

struct LraPassTables {
  int64_t rows = 0;
  int64_t longest = 0;            // positions of the longest document
  int num_parts = 2;              // scan outputs: 2 (1-D: forward, reverse), 4 (2-D: rows, columns)
  std::vector<int32_t> position;  // per row: its position in its document
  std::vector<int32_t> line_start, line_length, line_step, line_part;  // per scan line
  std::vector<int32_t> row0, pool, doc_index;                          // per document
  std::vector<int32_t> tokens;  // per row (embedding encoder)
  std::vector<float> pixels;    // per row, normalised (linear encoder)

  // Views of the line arrays (host pointers: valid while the tables live).
  LraScanLines HostLines() const {
    return {static_cast<int>(line_start.size()), line_start.data(), line_length.data(),
            line_step.data(), line_part.data()};
  }
};

// Tables for `docs` (validated inputs), the j-th being document first + j of the call: a
// 1-D document is one line (part 0); a 2-D one is image_height row lines (part 0) and
// image_width column lines (part 2) over its row-major positions.
inline LraPassTables BuildLraPassTables(const LraClassifierConfig& config,
                                        absl::Span<const LraDocument* const> docs, int32_t first) {
  LraPassTables p;
  p.num_parts = config.two_d ? 4 : 2;
  int32_t row = 0;
  for (size_t j = 0; j < docs.size(); ++j) {
    const LraDocument& doc = *docs[j];
    const int32_t t_len = static_cast<int32_t>(LraPositions(config, doc));
    p.longest = p.longest > t_len ? p.longest : t_len;
    for (int32_t t = 0; t < t_len; ++t) p.position.push_back(t);
    auto add_line = [&p](int32_t start, int32_t length, int32_t step, int32_t part) {
      p.line_start.push_back(start);
      p.line_length.push_back(length);
      p.line_step.push_back(step);
      p.line_part.push_back(part);
    };
    if (config.two_d) {
      const int32_t h = static_cast<int32_t>(config.image_height);
      const int32_t w = static_cast<int32_t>(config.image_width);
      for (int32_t i = 0; i < h; ++i) add_line(row + i * w, w, 1, 0);
      for (int32_t i = 0; i < w; ++i) add_line(row + i, h, w, 2);
    } else {
      add_line(row, t_len, 1, 0);
    }
    p.row0.push_back(row);
    p.pool.push_back(doc.pool_length > 0 ? static_cast<int32_t>(doc.pool_length) : t_len);
    p.doc_index.push_back(first + static_cast<int32_t>(j));
    if (config.embedding_encoder) {
      p.tokens.insert(p.tokens.end(), doc.tokens.begin(), doc.tokens.end());
    } else {
      const std::vector<float> normalised = NormalisedLraPixels(config, doc.pixels);
      p.pixels.insert(p.pixels.end(), normalised.begin(), normalised.end());
    }
    row += t_len;
  }
  p.rows = row;
  return p;
}

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_LRA_PASS_TABLES_H_
