#!/usr/bin/env python3
"""metrics/power_law against numpy: FitPowerLaw's exponent and coefficient equal
numpy.polyfit(log x, log y, 1) (relative 1e-9) on exact, noisy and random point sets,
its r2 equals numpy's 1 - SS_res / SS_tot, and ComputeOptimalFrontier equals a
brute-force frontier.

  power_law_numpy_test.py --fit build/tests/metrics/power_law_fit
"""
import argparse
import json
import subprocess
import sys

import numpy as np


def fit(program, x, y):
    text = "".join(f"{a!r} {b!r}\n" for a, b in zip(x, y))
    out = subprocess.run([program], input=text.encode(), capture_output=True, check=True)
    return json.loads(out.stdout)


def brute_frontier(c, loss):
    keep = []
    for i in range(len(c)):
        cheaper = [j for j in range(len(c)) if j != i and c[j] <= c[i]]
        if all(loss[i] < loss[j] for j in cheaper if c[j] < c[i]) and \
                all(loss[i] < loss[j] or (loss[i] == loss[j] and i < j)
                    for j in cheaper if c[j] == c[i]):
            keep.append(i)
    return sorted(keep, key=lambda i: c[i])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fit", required=True)
    args = ap.parse_args()
    rng = np.random.default_rng(35)
    cases = []
    x = np.logspace(12, 18, 9)
    cases.append(("exact", x, 20.0 * x ** -0.05))
    x = np.logspace(6, 9, 30)
    cases.append(("noisy", x, 3.0 * x ** -0.3 * np.exp(rng.normal(0, 0.05, x.size))))
    for k in range(20):
        n = int(rng.integers(2, 40))
        x = 10 ** rng.uniform(-3, 20, n)
        y = 10 ** rng.uniform(-2, 4, n)
        cases.append((f"random{k}", x, y))
    failures = 0
    for name, x, y in cases:
        got = fit(args.fit, x, y)
        b, log_a = np.polyfit(np.log(x), np.log(y), 1)
        pred = log_a + b * np.log(x)
        ss_res = float(((np.log(y) - pred) ** 2).sum())
        ss_tot = float(((np.log(y) - np.log(y).mean()) ** 2).sum())
        r2 = 1 - ss_res / ss_tot
        checks = [
            ("b", got["b"], b, 1e-9 * max(1.0, abs(b))),
            ("a", np.log(got["a"]), log_a, 1e-9 * max(1.0, abs(log_a))),
            ("r2", got["r2"], r2, 1e-9),
        ]
        for what, have, want, tol in checks:
            if abs(have - want) > tol:
                print(f"{name}: {what} {have!r} != numpy {want!r}")
                failures += 1
        frontier = brute_frontier(list(x), list(y))
        if got["frontier"] != frontier:
            print(f"{name}: frontier {got['frontier']} != {frontier}")
            failures += 1
    print(f"{len(cases)} point sets, {failures} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
