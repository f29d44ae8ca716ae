#!/usr/bin/env python3
"""One table of issues 31 and 32's rows from the JSON files of one device call.

Reads cuda_bench's JSON (--cuda), kernel_peer.py's (--peers: fla's HGRN2 and transformers'
LLaMA with SDPA, measured in the same call), suite_cuda_bench's (--suite) and
niah_cuda_bench's (--niah), and writes each row of the two issues' target tables with
hgeval's number, the peer's where there is one, the ratio and whether the target is met.
A missing input or row is recorded as missing, never guessed.

Usage (GPU machine, after the four programs ran):
  issue_rows.py --cuda cuda.json --peers kernel.json --suite suite.json --niah niah.json \
      --out issues.json
"""
import argparse
import json


def load(path):
    if not path:
        return {}
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        return {"_error": f"{path}: {e}"}


def get(d, *keys):
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


# (issue, family, row, kind, bound, reference). kind "peer_ratio_min": hgeval / peer
# throughput >= bound; "peer_time_max": hgeval's time <= bound x the peer's; "family_ratio_min":
# hgeval's rate >= bound x the reference family's; "max"/"min": an absolute bound.
ROWS = [
    (31, "hgrn2", "score_8x2048_tok_s", "peer_ratio_min", 1.3, None),
    (31, "hgrn2", "score_32x512_tok_s", "peer_ratio_min", 1.3, None),
    (31, "hgrn2", "prefill_64k_ms", "peer_time_max", 0.8, None),
    (31, "hgrn2", "prefill_64k_peak_gib", "max", 4.0, None),
    (31, "hgrn2", "decode_b1_tok_s", "min", 1000.0, None),
    (31, "tnl", "score_8x2048_tok_s", "family_ratio_min", 0.9, "hgrn2"),
    (31, "gla", "score_8x2048_tok_s", "family_ratio_min", 0.9, "hgrn2"),
    (31, "hgrn2", "suite_s", "max", 25.0, None),
    (31, "hgrn2", "niah_paper_grid_s", "max", 40.0, None),
    (32, "llama", "prefill_16k_ms", "peer_time_max", 0.9, None),
    (32, "llama", "prefill_64k_ms", "peer_time_max", 0.9, None),
    (32, "llama", "score_8x2048_tok_s", "peer_ratio_min", 1.4, None),
    (32, "llama", "niah_paper_grid_s", "max", 60.0, None),
    (32, "llama", "suite_s", "max", 20.0, None),
]


def ours(family, row, cuda, suite, niah):
    if row == "suite_s":
        return get(suite, "models", family, "suite_seconds")
    if row == "niah_paper_grid_s":
        runs = get(niah, "models", family, "runs") or []
        return min((r["sweep_wall_seconds"] for r in runs), default=None)
    return get(cuda, "models", family, row)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cuda", required=True)
    ap.add_argument("--peers", default="")
    ap.add_argument("--suite", default="")
    ap.add_argument("--niah", default="")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    cuda, peers, suite, niah = load(args.cuda), load(args.peers), load(args.suite), load(args.niah)

    rows = []
    for issue, family, row, kind, bound, reference in ROWS:
        e = {"issue": issue, "family": family, "row": row, "hgeval": ours(family, row, cuda, suite,
                                                                          niah)}
        peer = None
        if kind.startswith("peer_"):
            peer = get(peers, "peer", family, row)
            e["peer"] = peer
            e["peer_name"] = get(peers, "peers", family)
        elif kind == "family_ratio_min":
            peer = ours(reference, row, cuda, suite, niah)
            e["reference"] = f"hgeval {reference}"
            e["reference_value"] = peer
        value = e["hgeval"]
        met = None
        if value is not None:
            if kind in ("peer_ratio_min", "family_ratio_min") and peer:
                e["ratio"] = value / peer
                met = e["ratio"] >= bound
                e["target"] = f">= {bound}x"
            elif kind == "peer_time_max" and peer:
                e["ratio"] = value / peer  # hgeval's time as a fraction of the peer's
                met = e["ratio"] <= bound
                e["target"] = f"<= {bound}x the peer's time"
            elif kind == "max":
                met = value <= bound
                e["target"] = f"<= {bound}"
            elif kind == "min":
                met = value >= bound
                e["target"] = f">= {bound}"
        e["met"] = met
        rows.append(e)

    report = {"gpu": get(cuda, "gpu"), "date": get(cuda, "date"), "rows": rows,
              "inputs": {"cuda": args.cuda, "peers": args.peers, "suite": args.suite,
                         "niah": args.niah}}
    for name, d in (("cuda", cuda), ("peers", peers), ("suite", suite), ("niah", niah)):
        if "_error" in d:
            report.setdefault("errors", {})[name] = d["_error"]
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    for e in rows:
        peer = e.get("peer", e.get("reference_value"))
        ratio = f"{e['ratio']:.3f}x" if "ratio" in e else "-"
        value = f"{e['hgeval']:.1f}" if e["hgeval"] is not None else "missing"
        peer_s = f"{peer:.1f}" if isinstance(peer, (int, float)) else "-"
        state = {True: "met", False: "MISSED", None: "unknown"}[e["met"]]
        print(f"#{e['issue']} {e['family']:6s} {e['row']:22s} hgeval {value:>10s}  "
              f"peer {peer_s:>10s}  {ratio:>8s}  {e.get('target', '')}: {state}")


if __name__ == "__main__":
    main()
