#!/usr/bin/env bash
# Packs Debian's PostgreSQL 15 server binaries (postgres, initdb, pg_ctl) and modules, the shared
# libraries they load beyond glibc and the C++ runtime, and /usr/share/postgresql/15, in
# the layout the binaries expect (they find the share folder relative to their own), for
# a machine without PostgreSQL (bench/cuda/device_fleet_run.sh). Output: OUT_DIR/postgres.tar.xz.
# There: tar -C DIR -xJf postgres.tar.xz; LD_LIBRARY_PATH=DIR/lib DIR/usr/lib/postgresql/15/bin/initdb ...
# Usage: bench/cuda/postgres_bundle.sh OUT_DIR
set -euo pipefail
out=${1:?usage: postgres_bundle.sh OUT_DIR}
bin=/usr/lib/postgresql/15/bin
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage$bin" "$stage/usr/share/postgresql" "$stage/lib" "$out"
for b in postgres initdb pg_ctl; do
  cp "$bin/$b" "$stage$bin/"
  strip "$stage$bin/$b"
  ldd "$bin/$b" | awk '/=> \//{print $3}' | while read -r lib; do
    case $(basename "$lib") in
      libc.so*|libm.so*|libstdc++*|libgcc_s*|ld-linux*|libpthread*|libdl.so*|librt.so*|libresolv*) ;;
      *) cp -L -n "$lib" "$stage/lib/" ;;
    esac
  done
done
# The server's own modules (initdb loads dict_snowball, plpgsql, the encoding
# converters), without the JIT's bitcode.
mkdir -p "$stage/usr/lib/postgresql/15/lib"
cp /usr/lib/postgresql/15/lib/*.so "$stage/usr/lib/postgresql/15/lib/"
strip "$stage"/usr/lib/postgresql/15/lib/*.so
rm -f "$stage"/usr/lib/postgresql/15/lib/llvmjit*.so
cp -r /usr/share/postgresql/15 "$stage/usr/share/postgresql/"
tar -C "$stage" -cJf "$out/postgres.tar.xz" .
ls -la "$out/postgres.tar.xz"
