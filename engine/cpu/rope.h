// Rotary position embeddings in the rotate_half (NeoX / Hugging Face LLaMA / fla) layout:
// within each head, the pair (x_i, x_{i+hd/2}) is rotated by pos * theta^(-2i/hd).
#ifndef HGEVAL_ENGINE_CPU_ROPE_H_
#define HGEVAL_ENGINE_CPU_ROPE_H_

#include <cstdint>
#include <vector>

namespace hgeval::cpu {

class Rope {
 public:
  // head_dim must be even.
  Rope(int64_t head_dim, double theta);

  int64_t head_dim() const { return head_dim_; }

  // cos/sin tables for `count` consecutive positions starting at `first`, each row
  // head_dim/2 wide (the angle of pair i). Computed as transformers does: inverse
  // frequencies and angles in fp32, cos/sin of the fp32 angle.
  void Tables(int64_t first, int64_t count, std::vector<float>* cos, std::vector<float>* sin) const;

  // Rotates `rows` rows of `heads` heads each (row stride `stride` floats), row r at the
  // table row r.
  void Apply(float* x, int64_t rows, int64_t heads, int64_t stride, const std::vector<float>& cos,
             const std::vector<float>& sin) const;

 private:
  int64_t head_dim_;
  std::vector<float> inv_freq_;  // [head_dim / 2]
};

}  // namespace hgeval::cpu

#endif  // HGEVAL_ENGINE_CPU_ROPE_H_
