#!/usr/bin/env bash
# One GPU-machine call for issue 16 (run from the checkout's root, the bundle of
# bench/cuda/gpu_bundle.sh with fla at $BUNDLE; results under $OUT/r, packed to
# $OUT/all.tar.gz): every GPU test, cuda_bench (hgrn2, llama, tnl), the LLaMA NIAH
# paper grid, and the PyTorch peers of both on the same shapes, one JSON at the end.
# fla's Triton kernels compile (one-layer warm-up) while the tests run.
set -u
: "${OUT:?set OUT to the results folder}"
R=$OUT/r; mkdir -p $R/cfg $R/wcfg
T0=$(date +%s); el() { echo "+$(( $(date +%s) - T0 )) s"; }
g=/tmp/hgeval-gpu; rm -rf $g; mkdir -p $g; tar -C $g -xJf "${BUNDLE:-.gpu/bundle.tar.xz}"
export LD_LIBRARY_PATH=$g/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export HGEVAL_SOURCE_DIR=$PWD
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv > $R/gpu.txt
$g/bin/cuda_bench --random_weights --models hgrn2 --layers 1 --repeats 1 --decode_steps 2 \
  --skip_64k --micro=false --configs_out $R/wcfg --out /tmp/w.json > /dev/null 2>&1
PYTHONPATH=$g/peers timeout 300 python3 bench/peers/kernel_peer.py --warmup --models hgrn2 --niah_models none --configs $R/wcfg \
  --out /tmp/w2.json > $R/warmup.log 2>&1 &
wp=$!
for t in $g/bin/*_test; do
  echo "== $(basename $t)" >> $R/gpu-tests.log
  timeout 60 $t >> $R/gpu-tests.log 2>&1 || echo "FAILED: $(basename $t)"
done
grep -E "^\[  (PASSED|FAILED) " $R/gpu-tests.log | sort | uniq -c; el
# Optional: a script of one's own (e.g. a sanitizer run) while fla still compiles, before
# the timed part; it sees $g (the bundle) and $R.
if [[ -n ${AFTER_TESTS:-} ]]; then g=$g R=$R bash "$AFTER_TESTS"; el; fi
wait $wp; echo "warmup $?"; el
timeout 120 $g/bin/cuda_bench --random_weights --models hgrn2,llama,tnl --configs_out $R/cfg \
  --out $R/cuda.json > $R/cuda.txt 2> $R/cuda.log; echo "cuda_bench $?"; el
timeout 170 $g/bin/niah_cuda_bench --random_weights --models llama --out $R/niah.json \
  > $R/niah.txt 2> $R/niah.log; echo "niah $?"; tail -1 $R/niah.log; el
left=$(( 575 - ($(date +%s) - T0) ))
PYTHONPATH=$g/peers timeout $left python3 bench/peers/kernel_peer.py --configs $R/cfg \
  --hgeval $R/cuda.json --niah_hgeval $R/niah.json --out $R/kernel.json \
  > $R/peer.txt 2> $R/peer.log; echo "peer $?"; el
cat $R/cuda.txt $R/peer.txt; grep -v Warning $R/peer.log | tail -20
tar -C $OUT -czf $OUT/all.tar.gz r && rm -rf $R
