#!/usr/bin/env python3
"""Writes the small LRA fixtures of tests/tasks in the official formats, with the standard
library only (the PNG encoder here is independent of the C++ reader under test).
Run from this folder: python3 make_fixtures.py"""
import json, os, struct, zlib

def png_gray(path, rows):
    h, w = len(rows), len(rows[0])
    raw = b"".join(b"\x00" + bytes(r) for r in rows)  # filter type 0 per row
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)  # 8-bit, colour type 0 (gray)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))

base = "lra"
os.makedirs(f"{base}/listops", exist_ok=True)
with open(f"{base}/listops/basic_test.tsv", "w") as f:
    f.write("Source\tTarget\n")
    f.write("( ( ( [MAX 2 ) 9 ) ] )\t9\n")
    f.write("( ( ( ( [SM 5 ) 7 ) ( ( ( [MIN 3 ) 1 ) ] ) ) ] )\t3\n")
    f.write("( ( ( ( [MED 1 ) 8 ) 4 ) 6 ) ] )\t5\n")

os.makedirs(f"{base}/imdb", exist_ok=True)
with open(f"{base}/imdb/test.jsonl", "w") as f:
    f.write(json.dumps({"text": "A fine film.", "label": 1}) + "\n")
    f.write(json.dumps({"text": "Dull, caf\u00e9 scenes.", "label": 0}) + "\n")

os.makedirs(f"{base}/aan", exist_ok=True)
with open(f"{base}/aan/new_aan_pairs.test.tsv", "w") as f:
    f.write("1.0\tP01-1001\tW02-2002\tWe parse trees.\tTrees are parsed.\n")
    f.write("0\tP03-3003\tW04-4004\tSpeech.\tVision.\n")

os.makedirs(f"{base}/cifar10", exist_ok=True)
with open(f"{base}/cifar10/test_batch.bin", "wb") as f:
    for label, (r, g, b) in [(3, (255, 0, 0)), (7, (10, 20, 30))]:
        plane = lambda v: bytes((v + p) % 256 for p in range(1024))
        f.write(bytes([label]) + plane(r) + plane(g) + plane(b))

for side in (32, 128):  # Pathfinder and Path-X
    pf = f"{base}/pathfinder{side}/curv_contour_length_14"
    os.makedirs(f"{pf}/metadata", exist_ok=True)
    os.makedirs(f"{pf}/imgs/0", exist_ok=True)
    entries = []
    for i in range(10):
        rows = [[(17 * i + 3 * y + x) % 256 for x in range(side)] for y in range(side)]
        png_gray(f"{pf}/imgs/0/sample_{i}.png", rows)
        entries.append(f"imgs/0 sample_{i}.png 0 {i % 2} {side} 1.5 14 1 6\n")
    # Two metadata files; 10.npy sorts after 2.npy by its integer stem, not as text.
    with open(f"{pf}/metadata/2.npy", "w") as f:
        f.writelines(entries[:5])
    with open(f"{pf}/metadata/10.npy", "w") as f:
        f.writelines(entries[5:])
