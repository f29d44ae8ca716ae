#!/usr/bin/env python3
"""Every tracked C++ source is formatted as .clang-format says, checked.

Runs Debian's clang-format (14) with --dry-run -Werror over the C++ files git tracks
(.h .cc .cu .cuh .hpp .cpp) and lists each file it would change.

  python3 tests/layers/clang_format_check.py --clang-format BIN [--root DIR]
  exit 0: all formatted, 1: files to format (run clang-format -i on them)
"""

import argparse
import os
import re
import subprocess
import sys

SOURCE_EXTENSIONS = (".h", ".cc", ".cu", ".cuh", ".hpp", ".cpp")


def tracked_sources(root):
    out = subprocess.run(
        ["git", "-C", root, "ls-files", "-z"], check=True, capture_output=True, text=True
    ).stdout
    return sorted(
        p
        for p in out.split("\0")
        if p.endswith(SOURCE_EXTENSIONS) and os.path.isfile(os.path.join(root, p))
    )


# clang-format --dry-run -Werror names each file it would change on stderr as
# "path:line:col: error: code should be clang-formatted".
NOT_FORMATTED = re.compile(r"^(.+?):\d+:\d+: error: code should be clang-formatted", re.M)


def unformatted(clang_format, root, files, batch=200):
    bad = set()
    for start in range(0, len(files), batch):
        result = subprocess.run(
            [clang_format, "--dry-run", "-Werror", *files[start : start + batch]],
            cwd=root,
            capture_output=True,
            text=True,
        )
        found = set(NOT_FORMATTED.findall(result.stderr))
        if result.returncode != 0 and not found:
            raise SystemExit(f"clang-format failed: {result.stderr[:2000]}")
        bad |= found
    return sorted(bad)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clang-format", required=True)
    parser.add_argument("--root", default=".")
    args = parser.parse_args()
    files = tracked_sources(args.root)
    bad = unformatted(args.clang_format, args.root, files)
    for path in bad:
        print(f"{path}: not formatted (clang-format -i {path})")
    print(f"{len(files)} source files, {len(bad)} not formatted")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
