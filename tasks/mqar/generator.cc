#include "tasks/mqar/generator.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/util/status_macros.h"
#include "tasks/api/numpy_random.h"

namespace hgeval::tasks::mqar {

absl::Status ValidateMqarSpec(const MqarSegmentSpec& spec) {
  if (spec.input_seq_len <= 0 || spec.input_seq_len % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("mqar: input_seq_len must be even and positive, got ", spec.input_seq_len));
  }
  if (spec.vocab_size <= spec.input_seq_len) {
    return absl::InvalidArgumentError(absl::StrCat("mqar: vocab_size (", spec.vocab_size,
                                                   ") must exceed input_seq_len (",
                                                   spec.input_seq_len, ")"));
  }
  if (spec.vocab_size > (int64_t{1} << 31)) {
    return absl::InvalidArgumentError("mqar: vocab_size must fit 32-bit token ids");
  }
  if (spec.num_kv_pairs <= 0 || 4 * spec.num_kv_pairs > spec.input_seq_len) {
    return absl::InvalidArgumentError(
        absl::StrCat("mqar: need 0 < 4 * num_kv_pairs <= ", "input_seq_len, got num_kv_pairs ",
                     spec.num_kv_pairs, " and input_seq_len ", spec.input_seq_len));
  }
  // Keys come from V/2 - 1 ids: numpy refuses to take more without replacement.
  if (spec.num_kv_pairs > spec.vocab_size / 2 - 1) {
    return absl::InvalidArgumentError("mqar: more key-value pairs than key ids");
  }
  if (!(spec.power_a > 0.0)) {
    return absl::InvalidArgumentError("mqar: power_a must be positive");
  }
  if (spec.num_examples < 0) return absl::InvalidArgumentError("mqar: negative num_examples");
  return absl::OkStatus();
}

std::vector<double> MqarGapProbabilities(int64_t space, double power_a) {
  std::vector<double> p(static_cast<size_t>(space));
  for (int64_t i = 0; i < space; ++i) {
    p[static_cast<size_t>(i)] = power_a * std::pow(static_cast<double>(i + 1), power_a - 1.0);
  }
  const double sum = NumpyPairwiseSum(p);
  for (double& v : p) v /= sum;
  return p;
}

absl::StatusOr<std::vector<MqarDraw>> DrawMqarSegment(const MqarSegmentSpec& spec) {
  HG_RETURN_IF_ERROR(ValidateMqarSpec(spec));
  const size_t n = static_cast<size_t>(spec.num_examples);
  const int64_t k = spec.num_kv_pairs;
  const int64_t half_vocab = spec.vocab_size / 2;
  NumpyRandomState rng(spec.seed);
  std::vector<MqarDraw> draws(n);
  // choice(arange(1, V/2), K, replace=False) per row: a full permutation, first K.
  for (MqarDraw& draw : draws) {
    HG_ASSIGN_OR_RETURN(std::vector<int64_t> picked, rng.Choice(half_vocab - 1, k, false));
    for (int64_t index : picked) draw.keys.push_back(static_cast<int32_t>(1 + index));
  }
  for (MqarDraw& draw : draws) {
    HG_ASSIGN_OR_RETURN(std::vector<int64_t> picked,
                        rng.Choice(spec.vocab_size - half_vocab, k, false));
    for (int64_t index : picked) draw.values.push_back(static_cast<int32_t>(half_vocab + index));
  }
  const int64_t space = (spec.input_seq_len - 2 * k) / 2;
  const std::vector<double> p = MqarGapProbabilities(space, spec.power_a);
  for (MqarDraw& draw : draws) {
    HG_ASSIGN_OR_RETURN(std::vector<int64_t> picked, rng.Choice(space, k, false, p));
    for (int64_t index : picked) draw.gaps.push_back(static_cast<int32_t>(index));
  }
  return draws;
}

MqarExample BuildMqarExample(int64_t input_seq_len, const MqarDraw& draw) {
  const size_t k = draw.keys.size();
  const size_t length = static_cast<size_t>(input_seq_len);
  MqarExample example;
  example.inputs.assign(length, 0);
  example.labels.assign(length, kIgnoreLabel);
  for (size_t j = 0; j < k; ++j) {
    example.inputs[2 * j] = draw.keys[j];
    example.inputs[2 * j + 1] = draw.values[j];
  }
  // zoology builds length L + 1 and shifts: inputs = example[:-1], labels = labels[1:],
  // so the key's query position carries its value as the label.
  for (size_t j = 0; j < k; ++j) {
    const size_t query = 2 * k + 2 * static_cast<size_t>(draw.gaps[j]);
    if (query < length) {
      example.inputs[query] = draw.keys[j];
      example.labels[query] = draw.values[j];
    }
  }
  return example;
}

absl::StatusOr<std::vector<MqarExample>> GenerateMqarSegment(const MqarSegmentSpec& spec) {
  HG_ASSIGN_OR_RETURN(std::vector<MqarDraw> draws, DrawMqarSegment(spec));
  std::vector<MqarExample> examples;
  examples.reserve(draws.size());
  for (const MqarDraw& draw : draws) {
    examples.push_back(BuildMqarExample(spec.input_seq_len, draw));
  }
  return examples;
}

absl::StatusOr<std::vector<uint32_t>> ZoologyTestSeeds(uint32_t data_seed, int64_t num_train,
                                                       int64_t num_test) {
  constexpr int64_t kMaxSeed = int64_t{1} << 32;
  NumpyRandomState rng(data_seed);
  HG_RETURN_IF_ERROR(rng.RandInt(0, kMaxSeed / 2, num_train).status());
  HG_ASSIGN_OR_RETURN(std::vector<int64_t> test, rng.RandInt(kMaxSeed / 2, kMaxSeed, num_test));
  return std::vector<uint32_t>(test.begin(), test.end());
}

uint32_t ZoologyStandardTestSeed() {
  // One train and one test draw from seed 123: both are in range, so this cannot fail.
  return ZoologyTestSeeds(123, 1, 1).value()[0];
}

}  // namespace hgeval::tasks::mqar
