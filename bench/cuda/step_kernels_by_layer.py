#!/usr/bin/env python3
"""Folds the per-position kernel times of a cuda_bench --timeline JSON by layer.

A decode step (or a scoring pass) launches the same few kernels once a layer; the
timeline's `step_kernels` lists every launch of a step in order with its mean time. This
finds the repeat of `layers` layers in that list and prints each position of a layer with
its mean over the layers, then the launches before and after the layers.

  bench/cuda/step_kernels_by_layer.py RESULT.json [--pass decode_b1_16_steps] [--trace 1]
"""
import argparse
import json
import sys


def find_repeat(names, layers):
    """(start, period) of the first run of `layers` equal periods, the shortest period."""
    for period in range(1, len(names) // layers + 1):
        for start in range(0, len(names) - layers * period + 1):
            run = names[start:start + layers * period]
            if all(run[i] == run[i % period] for i in range(len(run))):
                return start, period
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json")
    ap.add_argument("--pass", dest="pass_key", default=None,
                    help="timeline pass key (default: every pass)")
    ap.add_argument("--trace", type=int, default=1, help="which trace (0 or 1)")
    args = ap.parse_args()
    report = json.load(open(args.json))
    layers = report["layers"]
    for model, r in report["models"].items():
        traces = r.get("timeline", [])
        if args.trace >= len(traces):
            continue
        for key, summary in traces[args.trace].items():
            if args.pass_key and key != args.pass_key:
                continue
            kernels = summary.get("step_kernels", [])
            if not kernels:
                continue
            names = [k["name"] for k in kernels]
            us = [k["us"] for k in kernels]
            print(f"[{model}] {key}: {len(kernels)} launches a step, "
                  f"{sum(us):.1f} us of kernels (means over {kernels[0]['steps']} steps)")
            found = find_repeat(names, layers)
            if found is None:
                for n, t in zip(names, us):
                    print(f"  {t:9.2f} us  {n}")
                continue
            start, period = found
            end = start + layers * period
            for i in range(start):
                print(f"  before  {us[i]:9.2f} us  {names[i]}")
            layer_sum = 0.0
            for p in range(period):
                vals = [us[start + l * period + p] for l in range(layers)]
                mean = sum(vals) / layers
                layer_sum += mean
                print(f"  layer[{p:2d}] {mean:8.2f} us (min {min(vals):.2f}, max {max(vals):.2f})"
                      f"  {names[start + p]}")
            print(f"  a layer {layer_sum:.2f} us x {layers} = {layer_sum * layers:.1f} us")
            for i in range(end, len(names)):
                print(f"  after   {us[i]:9.2f} us  {names[i]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
