#!/usr/bin/env python3
"""Per-kernel table of one pass from `ncu --csv --print-units base --metrics
gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum` on
`cuda_bench --profile_passes` (passes: prefill warm-up, prefill, scoring warm-up, scoring;
each starts with the embedding kernel). Usage: ncu_kernel_table.py CSV PASS_INDEX [LABEL]
(PASS_INDEX 1: the timed 16K prefill, 3: the timed 8x2048 scoring pass)."""
import csv
import re
import sys
from collections import OrderedDict


def short(name):
    name = re.sub(r"\(.*$", "", name)  # drop the parameter list
    name = re.sub(r"^void ", "", name)
    name = name.replace("hgeval::<unnamed>::", "").replace("hgeval::cuda::", "")
    if "gemm" in name.lower() or name.startswith(("sm90_", "cutlass", "nvjet")):
        return "GEMM " + name[:60]
    return name[:70]


def main():
    path, want = sys.argv[1], int(sys.argv[2])
    label = sys.argv[3] if len(sys.argv) > 3 else path
    lines = [l for l in open(path) if l.startswith('"')]
    kernels = OrderedDict()  # id -> [name, grid, ns, rd, wr]
    for row in csv.DictReader(lines):
        k = kernels.setdefault(row["ID"], [row["Kernel Name"], row["Grid Size"], 0, 0, 0])
        v = float(row["Metric Value"].replace(",", ""))
        col = {"gpu__time_duration.sum": 2, "dram__bytes_read.sum": 3,
               "dram__bytes_write.sum": 4}[row["Metric Name"]]
        k[col] = v
    passes, cur = [], None
    for k in kernels.values():
        if "EmbedKernel" in k[0]:
            cur = []
            passes.append(cur)
        if cur is not None:
            cur.append(k)
    p = passes[want]
    agg = OrderedDict()
    for name, grid, ns, rd, wr in p:
        a = agg.setdefault(short(name), [0, 0.0, 0.0])
        a[0] += 1
        a[1] += ns
        a[2] += rd + wr
    total = sum(a[1] for a in agg.values())
    print(f"### {label}: pass {want}, {len(p)} kernels, {total / 1e6:.3f} ms")
    print("| kernel | count | total ms | share | DRAM GB | TB/s |")
    print("|---|---|---|---|---|---|")
    for name, (n, ns, b) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
        print(f"| {name} | {n} | {ns / 1e6:.3f} | {100 * ns / total:.1f}% | {b / 1e9:.3f} | "
              f"{b / ns / 1e3:.2f} |")


if __name__ == "__main__":
    main()
