#!/usr/bin/env bash
# The hgeval image without pulling a base image: mmdebstrap makes a Debian bookworm rootfs
# from Debian's mirror with the server's runtime packages (those `ldd` lists, as in
# docker/Containerfile), the binaries of an existing build and the task data are copied
# in, and the result is a rootfs tarball. Then, if podman or buildah runs here, the tarball
# is imported as an image; otherwise the server is started from the unpacked rootfs with
# `unshare` + `chroot` (a container without an image runtime) and checked once: health,
# then one score request.
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
# The binaries and data go in through mmdebstrap's customize hooks.
mmdebstrap --variant=apt --include="$PACKAGES" \
  --customize-hook="mkdir -p \"\$1/usr/local/bin\" \"\$1/usr/share/hgeval\"" \
  --customize-hook="copy-in $BUILD/server/hgeval-server $BUILD/client/hgeval /usr/local/bin" \
  --customize-hook="copy-in $SRC/data /usr/share/hgeval" \
  --customize-hook="chroot \"\$1\" useradd --create-home --uid 1000 hgeval" \
  "$SUITE" "$TAR" "$MIRROR"
echo "rootfs: $TAR ($(du -h "$TAR" | cut -f1))"

if command -v podman >/dev/null && podman info >/dev/null 2>&1; then
  podman import --change 'USER hgeval' --change 'EXPOSE 50051' \
    --change 'CMD ["hgeval-server", "--listen=0.0.0.0:50051", "--data_dir=/usr/share/hgeval/data"]' \
    "$TAR" hgeval:debian
  echo "image: hgeval:debian (podman import)"
  exit 0
fi
echo "podman not usable here: checking the rootfs with unshare + chroot instead"
ROOT=$OUT/rootfs
rm -rf "$ROOT"
mkdir -p "$ROOT"
tar -C "$ROOT" -xf "$TAR"
# The model the check serves: the repository's test checkpoint and tokenizer.
mkdir -p "$ROOT/models"
cp -r "$SRC/tests/golden/hgrn2" "$ROOT/models/hgrn2"
cp "$SRC/data/models/stories260K/tok512.bin" "$ROOT/models/tok512.bin"
PORT=${PORT:-50671}
unshare --mount --pid --fork --kill-child chroot --userspec=1000:1000 "$ROOT" \
  /usr/local/bin/hgeval-server --listen="127.0.0.1:$PORT" --data_dir=/usr/share/hgeval/data \
  --model=hgrn2=/models/hgrn2 --tokenizer=/models/tok512.bin --store=/tmp/results.sqlite \
  >"$OUT/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
"$BUILD/client/hgeval" health --server="127.0.0.1:$PORT" --wait=60
"$BUILD/client/hgeval" run --server="127.0.0.1:$PORT" --model=hgrn2 --tasks=piqa --limit=5 \
  --progress=false --output="$OUT/score.json"
echo "server from the rootfs: healthy, scored piqa (--limit=5): $OUT/score.json"
