#!/usr/bin/env bash
# Installs hgeval's build and run dependencies from Debian packages (idempotent).
# The CUDA toolkit, where present, is used as found (/usr/local/cuda); nothing else is
# downloaded.
set -euo pipefail
PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libabsl-dev libre2-dev libsentencepiece-dev nlohmann-json3-dev zlib1g-dev libpng-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc grpc-proto
  libsqlite3-dev libpq-dev libcairo2-dev libssl-dev libcpp-httplib-dev
  libyaml-dev
  # PostgreSQL server binaries: the shared-store e2e tests start one (initdb, pg_ctl).
  postgresql
  # Slurm, run (tests/deploy/slurm_fleet_e2e_test.sh): a one-node cluster started by the test.
  munge slurmctld slurmd slurm-client
  # The Kubernetes manifests checked against the API's typed models, offline.
  python3-kubernetes python3-yaml
  clang libclang-rt-14-dev clang-format
  python3-numpy python3-grpcio python3-protobuf
  # The web UI's browser test: headless chromium driven through chromedriver by selenium.
  chromium chromium-driver python3-selenium
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; fi
  echo "install_deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install_deps: all ${#PACKAGES[@]} packages present"
fi
