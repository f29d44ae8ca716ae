// The configuration sweeps of tests/golden/<family>_sweep/ (issue 28; made by
// scripts/fixtures/tnl_sweep.py and config_sweep.py): which fixtures there are, which of them
// hgeval must refuse at load and for which config field, and the check that a refusal
// names it. Shared by the CPU golden test and the CUDA test of the sweeps.
#ifndef HGEVAL_TESTS_SUPPORT_CONFIG_SWEEP_H_
#define HGEVAL_TESTS_SUPPORT_CONFIG_SWEEP_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace hgeval::testing {

struct SweepFixture {
  std::string family;  // hgrn2, hgrn, gla, llama, mamba, tnl
  std::string name;    // c00 ..., refused_NN_<field>
  std::string dir;     // absolute folder
  // The config field the load must be refused for ("" when the fixture must load and
  // match its expected.safetensors): the fixture's file `refused`.
  std::string refused_field;

  // family + "_" + name: a valid gtest parameter name.
  std::string id() const { return family + "_" + name; }
};

// gtest prints a parameter with this (instead of its bytes).
void PrintTo(const SweepFixture& fixture, std::ostream* os);

// The families with a sweep, in test order.
const std::vector<std::string>& SweepFamilies();

// Every fixture of tests/golden/<family>_sweep/ of each family, sorted by name.
std::vector<SweepFixture> SweepFixtures();

// Non-fatal failures unless `status` is a refusal (INVALID_ARGUMENT or UNIMPLEMENTED)
// whose message names `field`.
void ExpectRefusedByName(const absl::Status& status, const std::string& field,
                         const std::string& what);

}  // namespace hgeval::testing

#endif  // HGEVAL_TESTS_SUPPORT_CONFIG_SWEEP_H_
