#!/usr/bin/env bash
# Packs what the GPU machine needs to run the CUDA tests and benchmarks of a CUDA build
# (engine-only, or a full build: then also hgeval-server and hgeval, for
# bench/cuda/suite_server_bench.sh) (that machine has CUDA, PyTorch and numpy, none of this project's Debian -dev
# packages): the test and benchmark binaries (stripped), the shared libraries they load
# that are not part of a base system or the CUDA toolkit, and, if given, fla's package for
# the PyTorch peers. Output: OUT_DIR/bundle.tar.xz. On the GPU machine:
#   mkdir -p /tmp/g && tar -C /tmp/g -xJf OUT_DIR/bundle.tar.xz
#   export LD_LIBRARY_PATH=/tmp/g/lib:$LD_LIBRARY_PATH HGEVAL_SOURCE_DIR=$PWD
#   /tmp/g/bin/golden_gpu_test; /tmp/g/bin/suite_cuda_bench --random_weights ...
#   PYTHONPATH=/tmp/g/peers python3 bench/peers/suite_peer.py ...
#
# Usage: bench/cuda/gpu_bundle.sh BUILD_DIR OUT_DIR [FLA_TARBALL]
#   BUILD_DIR: cmake -S . -B BUILD_DIR -G Ninja -DCMAKE_BUILD_TYPE=Release \
#                [-DHGEVAL_ENGINE_ONLY=ON] -DHGEVAL_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a
set -euo pipefail
build=${1:?usage: gpu_bundle.sh BUILD_DIR OUT_DIR [FLA_TARBALL]}
out=${2:?usage: gpu_bundle.sh BUILD_DIR OUT_DIR [FLA_TARBALL]}
fla=${3:-}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$out"
bins=("$build"/tests/cuda/*_test "$build"/bench/cuda/cuda_bench "$build"/bench/cuda/niah_cuda_bench
      "$build"/bench/cuda/suite_cuda_bench "$build"/bench/cuda/decode_gemm_algos "$build"/tasks/tools/hgeval-eval
      "$build"/server/hgeval-server "$build"/client/hgeval)
for b in "${bins[@]}"; do
  [[ -x $b ]] || continue
  cp "$b" "$stage/bin/"
  strip "$stage/bin/$(basename "$b")"
  # Libraries from Debian packages the GPU machine lacks; the C/C++ runtime, the driver
  # and the CUDA toolkit's own libraries are there already.
  ldd "$b" | awk '/=> \//{print $3}' | while read -r lib; do
    case $(basename "$lib") in
      libc.so*|libm.so*|libstdc++*|libgcc_s*|ld-linux*|libpthread*|libdl.so*|librt.so*) ;;
      libcuda.so*|libcublas*|libcudart*) ;;
      # OpenSSL 3 is there too (its Python links it; `ldconfig -p` lists libcrypto.so.3).
      libcrypto.so.3|libssl.so.3) ;;
      *) cp -L -n "$lib" "$stage/lib/" ;;
    esac
  done
done
if [[ -n $fla ]]; then
  mkdir -p "$stage/peers"
  tar -C "$stage/peers" -xJf "$fla"
fi
# -9e: a dictionary large enough to share the statically linked engine across binaries
# (the bundle travels in the device call's 64 MiB with the checkout).
tar -C "$stage" -cf - . | xz -9e > "$out/bundle.tar.xz"
ls -la "$out/bundle.tar.xz"
