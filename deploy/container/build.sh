#!/usr/bin/env bash
# The hgeval image without pulling a base image: mmdebstrap makes a Debian bookworm rootfs
# from Debian's mirror with the server's runtime packages (those `ldd` lists, as in
# docker/Containerfile), the binaries of an existing build and the task data are copied
# in, and the result is a rootfs tarball. Then, if podman runs here, the tarball is
# imported as an image and the server run from it; otherwise the server is started from
# the unpacked rootfs with `unshare` + `chroot`. Either way it is checked once: health,
# then one scoring job (piqa, --limit=5) on the repository's test model.
#   deploy/container/build.sh [BUILD_DIR] [OUT_DIR]
# Needs: mmdebstrap, network access to the Debian mirror, root (for chroot/unshare).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-$SRC/build}" && pwd)
OUT=${2:-$SRC/build/container}
SUITE=${SUITE:-bookworm}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
PACKAGES=ca-certificates,libgrpc++1.51,libprotobuf32,libabsl20220623,libre2-9,libsentencepiece0,zlib1g,libsqlite3-0,libpq5,libcairo2,libssl3,libpng16-16
mkdir -p "$OUT"
TAR=$OUT/hgeval-rootfs.tar

for bin in server/hgeval-server client/hgeval; do
  [[ -x "$BUILD/$bin" ]] || { echo "missing $BUILD/$bin: build it first"; exit 1; }
done
# The binaries and data go in through mmdebstrap's customize hooks. REUSE_ROOTFS=1 keeps a
# tarball made before (only the image/run steps again).
if [[ -z "${REUSE_ROOTFS:-}" || ! -s "$TAR" ]]; then
  mmdebstrap --variant=apt --include="$PACKAGES" \
    --customize-hook="mkdir -p \"\$1/usr/local/bin\" \"\$1/usr/share/hgeval\"" \
    --customize-hook="copy-in $BUILD/server/hgeval-server $BUILD/client/hgeval /usr/local/bin" \
    --customize-hook="copy-in $SRC/data /usr/share/hgeval" \
    --customize-hook="chroot \"\$1\" useradd --create-home --uid 1000 hgeval" \
    "$SUITE" "$TAR" "$MIRROR"
fi
echo "rootfs: $TAR ($(du -h "$TAR" | cut -f1))"

# The model the check serves: the repository's test checkpoint and tokenizer.
MODELS=$OUT/models
rm -rf "$MODELS"
mkdir -p "$MODELS"
cp -r "$SRC/tests/golden/hgrn2" "$MODELS/hgrn2"
cp "$SRC/data/models/stories260K/tok512.bin" "$MODELS/tok512.bin"
chmod -R a+rX "$MODELS"
PORT=${PORT:-50671}
SERVER_ARGS=(--listen="127.0.0.1:$PORT" --data_dir=/usr/share/hgeval/data
  --model=hgrn2=/models/hgrn2 --tokenizer=/models/tok512.bin --store=/store/results.sqlite)
# The result store on a volume (as deploy/kubernetes mounts one).
STORE=$OUT/store
rm -rf "$STORE"
mkdir -p "$STORE"
chmod 777 "$STORE"

PODMAN_RUNS=
if command -v podman >/dev/null && podman info >/dev/null 2>&1; then
  podman import --change 'USER hgeval' --change 'EXPOSE 50051' \
    --change 'CMD ["hgeval-server", "--listen=0.0.0.0:50051", "--data_dir=/usr/share/hgeval/data"]' \
    "$TAR" localhost/hgeval:debian
  echo "image: localhost/hgeval:debian (podman import of the rootfs)"
  if podman run --rm localhost/hgeval:debian true >"$OUT/podman-run.log" 2>&1; then
    PODMAN_RUNS=1
  else
    echo "podman cannot run containers here: $(cat "$OUT/podman-run.log")"
  fi
fi
if [[ -n "$PODMAN_RUNS" ]]; then
  podman run --rm --name hgeval-check --network=host -v "$MODELS:/models:ro" -v "$STORE:/store" \
    localhost/hgeval:debian hgeval-server "${SERVER_ARGS[@]}" >"$OUT/server.log" 2>&1 &
  how="podman run localhost/hgeval:debian"
  stop() { podman stop -t 2 hgeval-check >/dev/null 2>&1 || true; }
else
  echo "checking the rootfs with unshare + chroot instead of an image runtime"
  ROOT=$OUT/rootfs
  rm -rf "$ROOT"
  mkdir -p "$ROOT"
  tar -C "$ROOT" -xf "$TAR"
  cp -r "$MODELS" "$ROOT/models"
  mkdir -p "$ROOT/store"
  chmod 777 "$ROOT/store"
  unshare --mount --pid --fork --kill-child chroot --userspec=1000:1000 "$ROOT" \
    /usr/local/bin/hgeval-server "${SERVER_ARGS[@]}" >"$OUT/server.log" 2>&1 &
  how="unshare + chroot of the rootfs"
  SERVER=$!
  # unshare --fork ignores SIGTERM while it waits: the server (its child) is stopped.
  stop() {
    pkill -TERM -P "$SERVER" || true
    wait "$SERVER" || true
  }
fi
trap stop EXIT
"$BUILD/client/hgeval" health --server="127.0.0.1:$PORT" --wait=60
"$BUILD/client/hgeval" run --server="127.0.0.1:$PORT" --model=hgrn2 --tasks=piqa --limit=5 \
  --progress=false --output="$OUT/score.json"
echo "server from $how: healthy, scored piqa (--limit=5): $OUT/score.json"
