// Multi-Query Associative Recall test sets as zoology's `multiquery_ar` generates them
// (HazyResearch/zoology, zoology/data/multiquery_ar.py) with random_non_queries=False,
// drawn from numpy's legacy stream (tasks/api/numpy_random.h) so that the same seed gives
// the same examples, token for token.
//
// An example of length L with K pairs: `k1 v1 ... kK vK` (keys from [1, V/2), values
// from [V/2, V), K distinct of each), then a query region of L - 2K tokens that is zero
// except at 2*gap_j, which holds key_j. gap_j are K distinct draws from [0, (L - 2K) / 2)
// with p(i) proportional to (i + 1)^(power_a - 1). The label at the query position of
// key_j is value_j; every other label is -100 (the model must predict the value at the
// key's own position).
#ifndef HGEVAL_TASKS_MQAR_GENERATOR_H_
#define HGEVAL_TASKS_MQAR_GENERATOR_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace hgeval::tasks::mqar {

// The label of positions that are not scored (PyTorch's ignore_index).
inline constexpr int64_t kIgnoreLabel = -100;

// zoology's MQARConfig fields that shape a test set, plus the segment's seed.
struct MqarSegmentSpec {
  int64_t vocab_size = 8192;
  int64_t input_seq_len = 64;
  int64_t num_kv_pairs = 4;
  double power_a = 0.01;
  int64_t num_examples = 3000;
  uint32_t seed = 0;
};

// What the stream decides for one example; the sequence follows from it.
struct MqarDraw {
  std::vector<int32_t> keys;    // K distinct ids in [1, V/2)
  std::vector<int32_t> values;  // K distinct ids in [V/2, V)
  std::vector<int32_t> gaps;    // K distinct slots in [0, (L - 2K) / 2)
};

// One example as zoology's DataSegment holds it: inputs and labels of length L.
struct MqarExample {
  std::vector<int64_t> inputs;
  std::vector<int64_t> labels;
};

// InvalidArgument for specs zoology's asserts reject (odd L, V <= L, 4K > L) and for
// sizes numpy would refuse.
absl::Status ValidateMqarSpec(const MqarSegmentSpec& spec);

// The draws of every example, in order: all keys, then all values, then all gaps, as
// zoology's np.apply_along_axis calls consume the stream.
absl::StatusOr<std::vector<MqarDraw>> DrawMqarSegment(const MqarSegmentSpec& spec);

// The sequence of one example (no validation beyond what the spec already passed).
MqarExample BuildMqarExample(int64_t input_seq_len, const MqarDraw& draw);

// Draws and builds every example.
absl::StatusOr<std::vector<MqarExample>> GenerateMqarSegment(const MqarSegmentSpec& spec);

// p over the gap slots, computed as zoology computes it: power_a * i^(power_a - 1) for
// i = 1..space, divided by its (numpy pairwise) sum.
std::vector<double> MqarGapProbabilities(int64_t space, double power_a);

// zoology's prepare_data seeds: np.random.seed(data_seed), then randint(0, 2^31) for each
// train segment and randint(2^31, 2^32) for each test segment. The test segments' seeds.
absl::StatusOr<std::vector<uint32_t>> ZoologyTestSeeds(uint32_t data_seed, int64_t num_train,
                                                       int64_t num_test);

// The seed of a test segment in zoology's standard MQAR runs (Figure 2 of the paper: one
// train and one test segment per run, DataConfig.seed 123).
uint32_t ZoologyStandardTestSeed();

}  // namespace hgeval::tasks::mqar

#endif  // HGEVAL_TASKS_MQAR_GENERATOR_H_
