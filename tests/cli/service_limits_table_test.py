#!/usr/bin/env python3
"""docs/service.md's limits table against hgeval-server --help.

Every flag the table names exists and has the default the table gives (64 MiB, 1,024,
"no fixed limit" for an empty default), and every hgeval-server flag that caps something
(--max_*, --http_max_*, --*_timeout_ms) has a row.
"""
import argparse
import re
import subprocess
import sys

UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
# Flags that are not caps although their names say max (a model setting).
NOT_CAPS = {"max_context"}


def help_defaults(server):
    out = subprocess.run([server, "--help"], capture_output=True, text=True, timeout=30)
    text = out.stdout + out.stderr
    return dict(re.findall(r"^  --(\w+)=(.*)$", text, re.M))


def doc_value(text):
    """The table's default as the flag would print it; None when it is not a number."""
    text = text.strip()
    if text.startswith(("no fixed limit", "free at the first load")):
        return ""
    m = re.match(r"^([\d,]+)(?:\s*(KiB|MiB|GiB))?", text)
    if not m:
        return None
    return str(int(m.group(1).replace(",", "")) * UNITS.get(m.group(2), 1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--doc", required=True)
    parser.add_argument("--server", required=True)
    args = parser.parse_args()
    defaults = help_defaults(args.server)
    doc = open(args.doc, encoding="utf-8").read()
    section = doc[doc.index("## Limits and memory"):]
    section = section[:section.index("\n## ")] if "\n## " in section else section
    errors = []
    listed = set()
    for line in section.splitlines():
        if not line.startswith("| ") or line.startswith("| limit"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 4:
            continue
        flags = re.findall(r"`--(\w+)`", cells[1])
        # "`--a` / (fixed)" pairs with "x / y": each flag takes its own part.
        parts = [p.strip() for p in cells[2].split(" / ")] if "/" in cells[1] else [cells[2]]
        for i, flag in enumerate(flags):
            listed.add(flag)
            if flag not in defaults:
                errors.append(f"--{flag}: in the table, not a hgeval-server flag")
                continue
            want = doc_value(parts[min(i, len(parts) - 1)])
            if want is None:
                errors.append(f"--{flag}: the table's default '{cells[2]}' is not a value")
            elif want != defaults[flag]:
                errors.append(f"--{flag}: the table says {cells[2]} ({want}), "
                              f"--help says {defaults[flag]!r}")
    for flag in sorted(defaults):
        caps = flag.startswith(("max_", "http_max_")) or flag.endswith("_timeout_ms")
        if caps and flag not in NOT_CAPS and flag not in listed:
            errors.append(f"--{flag}: a cap with no row in the limits table")
    if not listed:
        errors.append("no flags found in the limits table")
    for e in errors:
        print(e, file=sys.stderr)
    print(f"{len(listed)} flags in the limits table checked against --help")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
