// The LRA classifier on one GPU. Classify packs many documents' positions into one pass
// (rows of a [rows, d] activation, document after document): every projection is one
// pinned GEMM over all rows (a row's result never depends on the others, gemm.h), the
// norms, gates and pooling work per row or per (document, channel), and the scans run per
// line of one document (lra_kernels.h). So an example's logits are the same, bit for bit,
// alone or in any batch.
#include "engine/cuda/lra_classifier.h"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/cuda/device.h"
#include "engine/cuda/device_select.h"
#include "engine/cuda/gemm.h"
#include "engine/cuda/kernels.h"
#include "engine/cuda/lra_kernels.h"
#include "engine/cuda/lra_pass_tables.h"
#include "engine/model/lra_weights.h"
#include "engine/util/status_macros.h"

namespace hgeval::cuda {
namespace {

// Positions per pass: bounds the scratch (about 25 d floats per row); a longer document
// runs alone in a pass of its own length.
constexpr int64_t kPassRows = int64_t{1} << 16;

struct DeviceLinear {
  DeviceBuffer weight, bias;  // bias empty when the checkpoint has none
  int64_t out = 0, in = 0;
};

struct DeviceNorm {
  DeviceBuffer weight, bias, running_mean, running_var;  // running_*: batch norm only
  float eps = 1e-5f;
  int64_t width = 0;
};

struct DeviceLayer {
  DeviceNorm mixer_norm;
  DeviceBuffer lower_bound;  // empty: none
  // HGRN2
  DeviceLinear in_proj;
  bool has_inner_norm = false;
  DeviceNorm inner_norm;  // HGRN2's LayerNorm(d) / HGRN1's LayerNorm(2d) before out_proj
  // HGRN1
  DeviceLinear input_proj, lambda_proj, gate;
  DeviceBuffer theta_forward, theta_reverse;
  DeviceLinear out_proj;
  DeviceNorm glu_norm;
  DeviceLinear l1, l2, l3;
};

// The linear encoder's input width on the GPU: the channels rounded up to a multiple of 4.
int64_t PaddedChannels(int64_t channels) { return (channels + 3) / 4 * 4; }

// Scratch slots, each grown on demand.
enum Slot {
  kX,
  kNormed,
  kUpdate,
  kFeature,  // HGRN2 in_proj output [rows, 3d]; HGRN1 input_proj output [rows, 2d]
  kLambda,   // HGRN1 lambda_proj output [rows, d]
  kGatePre,  // HGRN1 gate output [rows, 2d]
  kGate,     // λ [rows, d]
  kScale,    // 1 - λ [rows, d]
  kInput,    // HGRN2 silu(input) [rows, d]
  kOutGate,  // HGRN2 sigmoid(output gate) [rows, d]
  kParts,    // scan outputs [parts][rows][d or 2d]
  kMixed,    // summed scan outputs [rows, d or 2d]
  kGluPair,  // [rows, 2h]: l1 | l2
  kGluOut,   // [rows, h]
  kPixels,   // normalised pixels [rows, channels]
  kTables,   // int32 tables of the pass
  kPooled,   // [documents, d]
  kHead,     // [examples, 4d] retrieval features
  kHeadHidden,
  kLogits,
  kNumSlots
};

class CudaLraClassifier final : public LraClassifier {
 public:
  ~CudaLraClassifier() override {
    if (ctx_ == nullptr) return;
    DeviceGuard guard(ctx_->device());
    cudaStreamSynchronize(ctx_->stream());
  }

  const LraClassifierConfig& config() const override { return config_; }
  int64_t num_parameters() const override { return num_parameters_; }
  std::string backend() const override { return absl::StrCat("cuda:", ctx_->device()); }

  absl::Status Classify(absl::Span<const LraInput> inputs,
                        std::vector<std::vector<float>>* logits) const override {
    HG_RETURN_IF_ERROR(ValidateLraInputs(config_, inputs));
    logits->assign(inputs.size(), {});
    if (inputs.empty()) return absl::OkStatus();
    std::lock_guard<std::mutex> lock(mu_);
    DeviceGuard guard(ctx_->device());
    const int64_t d = config_.hidden_size;
    std::vector<const LraDocument*> docs;
    for (const LraInput& input : inputs) {
      for (const LraDocument& doc : input.documents) docs.push_back(&doc);
    }
    HG_ASSIGN_OR_RETURN(float* pooled, Scratch(kPooled, docs.size() * d));
    size_t first = 0;
    while (first < docs.size()) {
      size_t end = first;
      int64_t rows = 0;
      while (end < docs.size() &&
             (end == first || rows + LraPositions(config_, *docs[end]) <= kPassRows)) {
        rows += LraPositions(config_, *docs[end]);
        ++end;
      }
      HG_RETURN_IF_ERROR(RunPass(absl::MakeConstSpan(docs).subspan(first, end - first),
                                 static_cast<int32_t>(first), pooled));
      first = end;
    }
    HG_ASSIGN_OR_RETURN(const float* out, RunHead(pooled, static_cast<int64_t>(inputs.size())));
    const int64_t classes = config_.num_classes;
    std::vector<float> host(inputs.size() * classes);
    HG_CUDA_RETURN(cudaMemcpyAsync(host.data(), out, host.size() * sizeof(float),
                                   cudaMemcpyDeviceToHost, stream()));
    HG_CUDA_RETURN(cudaStreamSynchronize(stream()));
    for (size_t i = 0; i < inputs.size(); ++i) {
      (*logits)[i].assign(host.begin() + i * classes, host.begin() + (i + 1) * classes);
    }
    return absl::OkStatus();
  }

  absl::Status Load(const LraClassifierWeights& w, int device) {
    HG_ASSIGN_OR_RETURN(ctx_, DeviceContext::Create(device));
    DeviceGuard guard(device);
    HG_ASSIGN_OR_RETURN(gemm_, PinnedGemm::Create(kPassRows));
    num_parameters_ = w.num_parameters;
    if (config_.embedding_encoder) {
      HG_ASSIGN_OR_RETURN(embedding_, Upload(w.embedding.data));
    } else {
      // K padded with zero columns to a multiple of 4 (1-3 channels otherwise give the
      // GEMM rows of 4-12 bytes); the zero terms leave every sum unchanged.
      LraLinearWeights padded = w.input_encoder;
      const int64_t channels = padded.in();
      padded.weight.shape[1] = PaddedChannels(channels);
      padded.weight.data.assign(padded.out() * padded.in(), 0.0f);
      for (int64_t o = 0; o < padded.out(); ++o) {
        std::copy_n(w.input_encoder.weight.data.begin() + o * channels, channels,
                    padded.weight.data.begin() + o * padded.in());
      }
      HG_RETURN_IF_ERROR(UploadLinear(padded, &encoder_));
    }
    layers_.resize(w.layers.size());
    for (size_t l = 0; l < w.layers.size(); ++l) {
      const LraLayerWeights& src = w.layers[l];
      DeviceLayer& dst = layers_[l];
      HG_RETURN_IF_ERROR(UploadNorm(src.mixer_norm, &dst.mixer_norm));
      if (!src.lower_bound.empty()) {
        HG_ASSIGN_OR_RETURN(dst.lower_bound, Upload(src.lower_bound));
      }
      if (config_.mixer == LraMixer::kHgrn2) {
        HG_RETURN_IF_ERROR(UploadLinear(src.hgrn2.in_proj, &dst.in_proj));
        HG_RETURN_IF_ERROR(UploadLinear(src.hgrn2.out_proj, &dst.out_proj));
        dst.has_inner_norm = src.hgrn2.has_norm;
        if (dst.has_inner_norm) HG_RETURN_IF_ERROR(UploadNorm(src.hgrn2.norm, &dst.inner_norm));
      } else {
        HG_RETURN_IF_ERROR(UploadLinear(src.hgrn1.input_proj, &dst.input_proj));
        HG_RETURN_IF_ERROR(UploadLinear(src.hgrn1.lambda_proj, &dst.lambda_proj));
        HG_RETURN_IF_ERROR(UploadLinear(src.hgrn1.gate, &dst.gate));
        HG_RETURN_IF_ERROR(UploadLinear(src.hgrn1.out_proj, &dst.out_proj));
        dst.has_inner_norm = true;
        HG_RETURN_IF_ERROR(UploadNorm(src.hgrn1.norm, &dst.inner_norm));
        HG_ASSIGN_OR_RETURN(dst.theta_forward, Upload(src.hgrn1.theta_forward));
        HG_ASSIGN_OR_RETURN(dst.theta_reverse, Upload(src.hgrn1.theta_reverse));
      }
      HG_RETURN_IF_ERROR(UploadNorm(src.glu_norm, &dst.glu_norm));
      HG_RETURN_IF_ERROR(UploadLinear(src.l1, &dst.l1));
      HG_RETURN_IF_ERROR(UploadLinear(src.l2, &dst.l2));
      HG_RETURN_IF_ERROR(UploadLinear(src.l3, &dst.l3));
    }
    HG_RETURN_IF_ERROR(UploadNorm(w.final_norm, &final_norm_));
    if (config_.head == LraHead::kLinear) {
      HG_RETURN_IF_ERROR(UploadLinear(w.head, &head_));
    } else {
      HG_RETURN_IF_ERROR(UploadLinear(w.head_fc1, &head_fc1_));
      HG_RETURN_IF_ERROR(UploadLinear(w.head_fc2, &head_fc2_));
    }
    HG_CUDA_RETURN(cudaStreamSynchronize(stream()));
    return absl::OkStatus();
  }

  explicit CudaLraClassifier(LraClassifierConfig config) : config_(std::move(config)) {}

 private:
  cudaStream_t stream() const { return ctx_->stream(); }

  absl::StatusOr<DeviceBuffer> Upload(const std::vector<float>& host) {
    HG_ASSIGN_OR_RETURN(DeviceBuffer buf,
                        DeviceBuffer::Make(ctx_->pool(), std::max<size_t>(host.size(), 1) * 4));
    HG_RETURN_IF_ERROR(CopyToDevice(buf.get(), host.data(), host.size() * sizeof(float)));
    return buf;
  }

  absl::Status UploadLinear(const LraLinearWeights& src, DeviceLinear* dst) {
    dst->out = src.out();
    dst->in = src.in();
    HG_ASSIGN_OR_RETURN(dst->weight, Upload(src.weight.data));
    if (!src.bias.empty()) {
      HG_ASSIGN_OR_RETURN(dst->bias, Upload(src.bias));
    }
    return absl::OkStatus();
  }

  absl::Status UploadNorm(const LraNormWeights& src, DeviceNorm* dst) {
    dst->eps = src.eps;
    dst->width = src.width();
    HG_ASSIGN_OR_RETURN(dst->weight, Upload(src.weight));
    HG_ASSIGN_OR_RETURN(dst->bias, Upload(src.bias));
    if (src.batch) {
      HG_ASSIGN_OR_RETURN(dst->running_mean, Upload(src.running_mean));
      HG_ASSIGN_OR_RETURN(dst->running_var, Upload(src.running_var));
    }
    return absl::OkStatus();
  }

  // The scratch slot, grown to at least `floats` floats (contents not kept on growth).
  absl::StatusOr<float*> Scratch(Slot slot, size_t floats) const {
    DeviceBuffer& buf = scratch_[slot];
    const size_t bytes = std::max<size_t>(floats, 1) * sizeof(float);
    if (buf.size() < bytes) {
      buf.Reset();
      HG_ASSIGN_OR_RETURN(buf, DeviceBuffer::Make(ctx_->pool(), bytes));
    }
    return buf.as<float>();
  }

  // y[rows, out] (row stride ldy) = x[rows, in] W^T + b: the pinned cuBLASLt GEMM, or, for
  // a shape it has no batch-invariant algorithm for (odd widths), LraLinear.
  absl::Status Linear(const DeviceLinear& l, const float* x, int64_t rows, float* y,
                      int64_t ldy) const {
    absl::Status pinned = gemm_->Run(stream(), rows, l.out, l.in, MatRef{x, Act::kF32, l.in},
                                     MatRef{l.weight.get(), Act::kF32, l.in}, y, Act::kF32, ldy);
    if (!pinned.ok()) {
      cudaGetLastError();  // clear what the failed call may have left
      if (LraLinear(x, l.in, l.weight.as<float>(), l.in, rows, static_cast<int>(l.out),
                    static_cast<int>(l.in), y, ldy, stream()) != cudaSuccess) {
        return pinned;
      }
    }
    if (l.bias.get() != nullptr) {
      HG_CUDA_RETURN(AddBias(y, ldy, l.bias.as<float>(), static_cast<int>(rows),
                             static_cast<int>(l.out), stream()));
    }
    return absl::OkStatus();
  }

  absl::Status Norm(const DeviceNorm& n, const float* x, int64_t rows, float* y) const {
    HG_CUDA_RETURN(LraNorm(x, static_cast<int>(rows), static_cast<int>(n.width),
                           n.weight.as<float>(), n.bias.as<float>(), n.running_mean.as<float>(),
                           n.running_var.as<float>(), n.eps, y, stream()));
    return absl::OkStatus();
  }

  // The sinusoidal table covers at least `positions` positions.
  absl::Status EnsurePositionTable(int64_t positions) const {
    if (positions <= table_positions_) return absl::OkStatus();
    const int64_t d = config_.hidden_size;
    const int64_t grown = (positions + 1023) / 1024 * 1024;
    std::vector<float> host(grown * d);
    for (int64_t t = 0; t < grown; ++t) {
      for (int64_t c = 0; c < d; ++c) host[t * d + c] = LraSinusoid(t, c, d);
    }
    HG_CUDA_RETURN(cudaStreamSynchronize(stream()));  // the old table may be in use
    position_table_.Reset();
    HG_ASSIGN_OR_RETURN(position_table_, DeviceBuffer::Make(ctx_->pool(), host.size() * 4));
    HG_RETURN_IF_ERROR(
        CopyToDevice(position_table_.get(), host.data(), host.size() * sizeof(float)));
    table_positions_ = grown;
    return absl::OkStatus();
  }

  // Encodes `docs` (global indices first, first + 1, ...) and
  // writes each one's pooled final-norm output to pooled[global index].
  absl::Status RunPass(absl::Span<const LraDocument* const> docs, int32_t first,
                       float* pooled) const {
    const int64_t d = config_.hidden_size;
    const LraPassTables p = BuildLraPassTables(config_, docs, first);
    const int64_t rows = p.rows;
    const int n_rows = static_cast<int>(rows);
    const int num_docs = static_cast<int>(docs.size());
    const int num_parts = p.num_parts;
    // One upload of every int32 table.
    std::vector<int32_t> tables;
    auto append = [&tables](const std::vector<int32_t>& v) {
      const size_t at = tables.size();
      tables.insert(tables.end(), v.begin(), v.end());
      return at;
    };
    const size_t at_position = append(p.position), at_start = append(p.line_start),
                 at_length = append(p.line_length), at_step = append(p.line_step),
                 at_part = append(p.line_part), at_row0 = append(p.row0), at_pool = append(p.pool),
                 at_doc = append(p.doc_index), at_tokens = append(p.tokens);
    HG_ASSIGN_OR_RETURN(float* table_floats, Scratch(kTables, tables.size()));
    const int32_t* dev = reinterpret_cast<const int32_t*>(table_floats);
    HG_CUDA_RETURN(cudaMemcpyAsync(table_floats, tables.data(), tables.size() * sizeof(int32_t),
                                   cudaMemcpyHostToDevice, stream()));
    LraScanLines lines;
    lines.num_lines = static_cast<int>(p.line_start.size());
    lines.start = dev + at_start;
    lines.length = dev + at_length;
    lines.step = dev + at_step;
    lines.part = dev + at_part;

    std::vector<float> pixels;  // the padded pixels' upload source, alive until the sync
    HG_ASSIGN_OR_RETURN(float* x, Scratch(kX, rows * d));
    HG_ASSIGN_OR_RETURN(float* normed, Scratch(kNormed, rows * d));
    HG_ASSIGN_OR_RETURN(float* update, Scratch(kUpdate, rows * d));
    if (config_.embedding_encoder) {
      HG_CUDA_RETURN(EmbedRows(embedding_.get(), Act::kF32, dev + at_tokens, n_rows,
                               static_cast<int>(d), x, stream()));
    } else {
      const int64_t channels = config_.input_channels, padded = encoder_.in;
      pixels.assign(rows * padded, 0.0f);
      for (int64_t r = 0; r < rows; ++r) {
        std::copy_n(p.pixels.begin() + r * channels, channels, pixels.begin() + r * padded);
      }
      HG_ASSIGN_OR_RETURN(float* dev_pixels, Scratch(kPixels, pixels.size()));
      HG_CUDA_RETURN(cudaMemcpyAsync(dev_pixels, pixels.data(), pixels.size() * sizeof(float),
                                     cudaMemcpyHostToDevice, stream()));
      HG_RETURN_IF_ERROR(Linear(encoder_, dev_pixels, rows, x, d));
    }
    if (config_.positional) {
      HG_RETURN_IF_ERROR(EnsurePositionTable(p.longest));
      HG_CUDA_RETURN(LraAddPositions(x, dev + at_position, n_rows, static_cast<int>(d),
                                     position_table_.as<float>(), stream()));
    }
    const int64_t h = config_.glu_size;
    HG_ASSIGN_OR_RETURN(float* glu_pair, Scratch(kGluPair, rows * 2 * h));
    HG_ASSIGN_OR_RETURN(float* glu_out, Scratch(kGluOut, rows * h));
    for (const DeviceLayer& layer : layers_) {
      HG_RETURN_IF_ERROR(Norm(layer.mixer_norm, x, rows, normed));
      if (config_.mixer == LraMixer::kHgrn2) {
        HG_RETURN_IF_ERROR(Hgrn2Mixer(layer, normed, rows, lines, num_parts, update));
      } else {
        HG_RETURN_IF_ERROR(Hgrn1Mixer(layer, normed, rows, lines, num_parts, update));
      }
      HG_CUDA_RETURN(LraAdd(x, update, rows * d, stream()));
      HG_RETURN_IF_ERROR(Norm(layer.glu_norm, x, rows, normed));
      HG_RETURN_IF_ERROR(Linear(layer.l1, normed, rows, glu_pair, 2 * h));
      HG_RETURN_IF_ERROR(Linear(layer.l2, normed, rows, glu_pair + h, 2 * h));
      HG_CUDA_RETURN(SwiGlu(glu_pair, n_rows, static_cast<int>(h), glu_out, Act::kF32, stream()));
      HG_RETURN_IF_ERROR(Linear(layer.l3, glu_out, rows, update, d));
      HG_CUDA_RETURN(LraAdd(x, update, rows * d, stream()));
    }
    HG_RETURN_IF_ERROR(Norm(final_norm_, x, rows, x));
    HG_CUDA_RETURN(LraMeanPool(x, static_cast<int>(d), dev + at_row0, dev + at_pool, dev + at_doc,
                               num_docs, pooled, stream()));
    // The host tables must outlive their upload; the next pass reuses the scratch.
    HG_CUDA_RETURN(cudaStreamSynchronize(stream()));
    return absl::OkStatus();
  }

  absl::Status Hgrn2Mixer(const DeviceLayer& layer, const float* normed, int64_t rows,
                          const LraScanLines& lines, int num_parts, float* out) const {
    const int64_t d = config_.hidden_size;
    const int n_rows = static_cast<int>(rows);
    HG_ASSIGN_OR_RETURN(float* feature, Scratch(kFeature, rows * 3 * d));
    HG_ASSIGN_OR_RETURN(float* input, Scratch(kInput, rows * d));
    HG_ASSIGN_OR_RETURN(float* out_gate, Scratch(kOutGate, rows * d));
    HG_ASSIGN_OR_RETURN(float* gate, Scratch(kGate, rows * d));
    HG_ASSIGN_OR_RETURN(float* scale, Scratch(kScale, rows * d));
    HG_ASSIGN_OR_RETURN(float* parts, Scratch(kParts, num_parts * rows * d));
    HG_ASSIGN_OR_RETURN(float* mixed, Scratch(kMixed, rows * d));
    HG_RETURN_IF_ERROR(Linear(layer.in_proj, normed, rows, feature, 3 * d));
    HG_CUDA_RETURN(LraHgrn2Inputs(feature, n_rows, static_cast<int>(d), input, out_gate, stream()));
    HG_CUDA_RETURN(LraForgetGates(feature + 2 * d, 3 * d, n_rows, static_cast<int>(d),
                                  layer.lower_bound.as<float>(), gate, scale, stream()));
    HG_CUDA_RETURN(LraHgrn2Scan(gate, scale, input, out_gate, n_rows, static_cast<int>(d),
                                static_cast<int>(config_.expand_ratio), lines, parts, stream()));
    HG_CUDA_RETURN(LraSumParts(parts, num_parts, rows * d, mixed, stream()));
    if (layer.has_inner_norm) HG_RETURN_IF_ERROR(Norm(layer.inner_norm, mixed, rows, mixed));
    return Linear(layer.out_proj, mixed, rows, out, d);
  }

  absl::Status Hgrn1Mixer(const DeviceLayer& layer, const float* normed, int64_t rows,
                          const LraScanLines& lines, int num_parts, float* out) const {
    const int64_t d = config_.hidden_size;
    const int n_rows = static_cast<int>(rows);
    HG_ASSIGN_OR_RETURN(float* input, Scratch(kFeature, rows * 2 * d));
    HG_ASSIGN_OR_RETURN(float* lambda, Scratch(kLambda, rows * d));
    HG_ASSIGN_OR_RETURN(float* gate_pre, Scratch(kGatePre, rows * 2 * d));
    HG_ASSIGN_OR_RETURN(float* gate, Scratch(kGate, rows * d));
    HG_ASSIGN_OR_RETURN(float* scale, Scratch(kScale, rows * d));
    HG_ASSIGN_OR_RETURN(float* parts, Scratch(kParts, num_parts * rows * 2 * d));
    HG_ASSIGN_OR_RETURN(float* mixed, Scratch(kMixed, rows * 2 * d));
    HG_RETURN_IF_ERROR(Linear(layer.input_proj, normed, rows, input, 2 * d));
    HG_CUDA_RETURN(LraSiluInPlace(input, rows * 2 * d, stream()));
    HG_RETURN_IF_ERROR(Linear(layer.lambda_proj, normed, rows, lambda, d));
    HG_RETURN_IF_ERROR(Linear(layer.gate, normed, rows, gate_pre, 2 * d));
    HG_CUDA_RETURN(LraForgetGates(lambda, d, n_rows, static_cast<int>(d),
                                  layer.lower_bound.as<float>(), gate, scale, stream()));
    HG_CUDA_RETURN(LraHgrn1Scan(gate, scale, input, layer.theta_forward.as<float>(),
                                layer.theta_reverse.as<float>(), n_rows, static_cast<int>(d), lines,
                                parts, stream()));
    HG_CUDA_RETURN(LraSumParts(parts, num_parts, rows * 2 * d, mixed, stream()));
    HG_RETURN_IF_ERROR(Norm(layer.inner_norm, mixed, rows, mixed));
    HG_CUDA_RETURN(LraMulSilu(mixed, gate_pre, rows * 2 * d, stream()));
    return Linear(layer.out_proj, mixed, rows, out, d);
  }

  // The head over pooled [examples * documents per example, d]: logits [examples, classes].
  absl::StatusOr<const float*> RunHead(const float* pooled, int64_t examples) const {
    const int64_t d = config_.hidden_size;
    HG_ASSIGN_OR_RETURN(float* logits, Scratch(kLogits, examples * config_.num_classes));
    if (config_.head == LraHead::kLinear) {
      HG_RETURN_IF_ERROR(Linear(head_, pooled, examples, logits, config_.num_classes));
      return logits;
    }
    HG_ASSIGN_OR_RETURN(float* features, Scratch(kHead, examples * 4 * d));
    HG_ASSIGN_OR_RETURN(float* hidden, Scratch(kHeadHidden, examples * head_fc1_.out));
    HG_CUDA_RETURN(LraRetrievalFeatures(pooled, static_cast<int>(examples), static_cast<int>(d),
                                        features, stream()));
    HG_RETURN_IF_ERROR(Linear(head_fc1_, features, examples, hidden, head_fc1_.out));
    HG_CUDA_RETURN(LraGeluInPlace(hidden, examples * head_fc1_.out, stream()));
    HG_RETURN_IF_ERROR(Linear(head_fc2_, hidden, examples, logits, config_.num_classes));
    return logits;
  }

  LraClassifierConfig config_;
  int64_t num_parameters_ = 0;
  // Declared first so that it is destroyed last: every buffer below returns to its pool.
  std::unique_ptr<DeviceContext> ctx_;
  std::unique_ptr<PinnedGemm> gemm_;
  DeviceBuffer embedding_;
  DeviceLinear encoder_;
  std::vector<DeviceLayer> layers_;
  DeviceNorm final_norm_;
  DeviceLinear head_, head_fc1_, head_fc2_;
  // One Classify at a time: the scratch, the position table and the pinned GEMM's
  // algorithm map are shared.
  mutable std::mutex mu_;
  mutable DeviceBuffer scratch_[kNumSlots];
  mutable DeviceBuffer position_table_;
  mutable int64_t table_positions_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<LraClassifier>> BuildLraClassifier(const Checkpoint& checkpoint,
                                                                  const LraClassifierConfig& config,
                                                                  const std::string& device) {
  HG_ASSIGN_OR_RETURN(int index, SelectCudaDevice(device));
  if (config.mixer == LraMixer::kHgrn2 && config.expand_ratio > kMaxLraHeadSize) {
    return absl::UnimplementedError(
        absl::StrCat("LRA classifier ", checkpoint.source(), ": HGRN2 head size (expand_ratio) ",
                     config.expand_ratio, " is above the CUDA scan's limit of ", kMaxLraHeadSize,
                     "; use --device cpu"));
  }
  HG_ASSIGN_OR_RETURN(LraClassifierWeights weights, ReadLraClassifierWeights(checkpoint, config));
  auto model = std::make_unique<CudaLraClassifier>(config);
  HG_RETURN_IF_ERROR(model->Load(weights, index));
  return model;
}

}  // namespace hgeval::cuda
