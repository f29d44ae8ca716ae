#!/usr/bin/env python3
"""Splits pd_english into the demonstration series' training tokens and held-out text.

Held out: the last HELDOUT_DOCS documents (in corpus order) of at most HELDOUT_MAX_CHARS
characters (US presidential inaugural addresses 1985-2005, about 70 KB), written as text with documents
separated by "\\n<|endoftext|>\\n" to data/series/pd_english_heldout.txt: the
`pd_english_heldout` task's file. Every other document is tokenized by the engine
(`hgeval-engine tokenize`, the stories260K llama2.c tokenizer, no BOS; in pieces of about
64 KB cut at paragraph breaks), given a BOS (1) in front, and the ids are concatenated as
little-endian uint16 into OUT.u16.xz for scripts/train/series_train.py.

  series_tokens.py --engine build/engine/tools/hgeval-engine \\
      --corpus ../shared/corpora/pd_english.txt.gz --out /tmp/pd_english_train
"""
import argparse
import array
import gzip
import lzma
import os
import subprocess

SEPARATOR = "\n<|endoftext|>\n"
HELDOUT_DOCS = 6
HELDOUT_MAX_CHARS = 15000
PIECE_CHARS = 65536
TOKENIZER = "data/models/stories260K/tok512.bin"


def documents(corpus):
    with gzip.open(corpus, "rt", encoding="utf-8") as f:
        text = f.read()
    return [d for d in (d.strip("\n") for d in text.split(SEPARATOR)) if d.strip()]


def heldout_indices(docs):
    short = [i for i, d in enumerate(docs) if len(d) <= HELDOUT_MAX_CHARS]
    return set(short[-HELDOUT_DOCS:])


def pieces(doc):
    out, buf = [], ""
    for para in doc.split("\n\n"):
        if buf and len(buf) + len(para) > PIECE_CHARS:
            out.append(buf)
            buf = ""
        buf += ("\n\n" if buf else "") + para
    if buf:
        out.append(buf)
    return [("\n\n" if i else "") + p for i, p in enumerate(out)]


def tokenize(engine, text):
    r = subprocess.run([engine, "tokenize", "--tokenizer", TOKENIZER, "--bos=none"],
                       input=text.encode(), capture_output=True, check=True)
    return [int(x) for x in r.stdout.split()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", required=True, help="OUT.u16.xz is written")
    ap.add_argument("--heldout", default="data/series/pd_english_heldout.txt")
    args = ap.parse_args()
    docs = documents(args.corpus)
    held = heldout_indices(docs)
    os.makedirs(os.path.dirname(args.heldout), exist_ok=True)
    with open(args.heldout, "w", encoding="utf-8") as f:
        f.write(SEPARATOR.join(docs[i] for i in sorted(held)) + "\n")
    ids = array.array("H")
    for i, doc in enumerate(docs):
        if i in held:
            continue
        ids.append(1)
        for piece in pieces(doc):
            ids.extend(tokenize(args.engine, piece))
    with open(args.out + ".u16.xz", "wb") as f:
        f.write(lzma.compress(ids.tobytes(), preset=9))
    print(f"{len(docs) - len(held)} training documents, {len(ids)} tokens; "
          f"{len(held)} held out in {args.heldout}")


if __name__ == "__main__":
    main()
