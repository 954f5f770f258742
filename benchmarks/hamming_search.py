#!/usr/bin/env python
"""Hamming-space top-k search (`bitcode_allennlp.bits.index.HammingIndex`) over 1M random 24-bit codes (a script,
not a test).

Builds a synthetic codes index the size of a large corpus: `--n` random K-bit codes (seed 0) in sentences of 20
words with one label view of 10 labels, saves it (`HammingIndex.save`) and opens it memory-mapped
(`HammingIndex.load`), as `allennlp bits search` does. Then, in `--rounds` rounds, each timing every item once:

  copy        `np.copyto` of the packed uint64 code array into a preallocated array: the reference, one read and
              one write of the data (10 copies per round, time per copy)
  np.copy     `np.copy` of it (allocates a new array each time, so page faults are included)
  scan        distances only: popcount(q XOR codes) for a block of queries (`HammingIndex.distance_blocks`)
  top-k       `index.search(queries, k)` for `--queries` random queries in one call (memory-mapped index)
  top-k mem   the same on the in-memory arrays
  top-k 1by1  one `search` call per query (latency of a single query), on the first 100 queries
  radius      `index.radius(q, --radius)` per query, on the first 100 queries
  swar        scan with the SWAR bit count instead of `np.bitwise_count` (what numpy < 2.0 would get)

Reported: median seconds per query, queries per second, and the ratio of a query's time to one copy of the packed
array (target for top-k: within 5x). Checked: the top-k of 20 queries equal a brute-force ranking by (distance,
index) (`np.lexsort`). Memory: bytes per code of the packed array, bytes per entry of the saved index (codes,
sentence ids, positions, labels, sentences.jsonl), and the uint8 distance block. One numpy thread (numpy's element
ops are single-threaded).

Usage (repository root, venv active): `python benchmarks/hamming_search.py [--n 1000000] [--bits 24]
[--queries 1000] [--k 10] [--rounds 5]`. Writes `benchmarks/results/hamming_search.json` (or `--out`) and prints a
markdown table.
"""
import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import bitcode_allennlp.bits.index as index_module  # noqa: E402
from bitcode_allennlp.bits.corpus import LabelColumn  # noqa: E402
from bitcode_allennlp.bits.index import HammingIndex, hamming_distances, index_size_bytes  # noqa: E402


COPIES = 10  # copies per round: one 8 MB copy is too short to time alone


def synthetic_index(n: int, num_bits: int, seed: int = 0) -> HammingIndex:
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 1 << num_bits, n, dtype=np.uint64)  # (n,)
    length = 20
    sentence_ids = (np.arange(n) // length).astype(np.int32)  # (n,)
    positions = (np.arange(n) % length).astype(np.int32)  # (n,)
    vocabulary = np.array([f"w{i}" for i in range(50_000)])
    words = vocabulary[rng.integers(0, len(vocabulary), n)].tolist()
    sentences = [{"words": words[s : s + length], "source": f"synthetic:{s // length + 1}", "line": s // length + 1}
                 for s in range(0, n, length)]
    labels = {"tag": LabelColumn(rng.integers(0, 10, n).astype(np.int32), [f"T{i}" for i in range(10)])}
    return HammingIndex(codes, num_bits, sentence_ids, positions, sentences, labels, corpus="synthetic")


def brute_force(codes: np.ndarray, query: int, k: int) -> np.ndarray:
    distances = np.array([bin(int(c) ^ query).count("1") for c in codes.tolist()])  # (n,)
    return np.lexsort((np.arange(codes.shape[0]), distances))[:k]  # (k,)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--bits", type=int, default=24)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--radius", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "hamming_search.json")
    args = parser.parse_args()
    started = time.time()
    memory_index = synthetic_index(args.n, args.bits)
    rng = np.random.default_rng(1)
    queries = rng.integers(0, 1 << args.bits, args.queries, dtype=np.uint64)  # (q,)
    few = queries[:100]
    with tempfile.TemporaryDirectory() as directory:
        memory_index.save(directory)
        disk_bytes = {name: os.path.getsize(os.path.join(directory, name)) for name in sorted(os.listdir(directory))}
        total_disk = index_size_bytes(directory)
        index = HammingIndex.load(directory, mmap=True)
        assert isinstance(index.codes, np.memmap)
        codes = np.asarray(memory_index.codes)
        target = np.empty_like(codes)

        def scan():
            for _ in index.distance_blocks(queries):
                pass

        def one_by_one():
            for query in few:
                index.search(query, args.k)

        def radius():
            for query in few:
                index.radius(int(query), args.radius)

        def swar():
            index_module.HAS_BITWISE_COUNT = False
            try:
                hamming_distances(few[:20], codes)
            finally:
                index_module.HAS_BITWISE_COUNT = hasattr(np, "bitwise_count")

        def copies(copy):
            def run():
                for _ in range(COPIES):
                    copy()
            return run

        items = {  # name -> (function, queries it answers; for copies: copies made)
            "copy": (copies(lambda: np.copyto(target, codes)), -COPIES),
            "np.copy": (copies(lambda: np.copy(codes)), -COPIES),
            "scan": (scan, len(queries)),
            "top-k": (lambda: index.search(queries, args.k), len(queries)),
            "top-k mem": (lambda: memory_index.search(queries, args.k), len(queries)),
            "top-k 1by1": (one_by_one, len(few)),
            "radius": (radius, len(few)),
            "swar": (swar, 20),
        }
        times = {name: [] for name in items}
        for function, _ in items.values():
            function()  # warm-up (page cache of the memory map, allocations)
        for _ in range(args.rounds):
            for name, (function, _) in items.items():
                start = time.perf_counter()
                function()
                times[name].append(time.perf_counter() - start)
        top, dist = index.search(queries[:20], args.k)
        verified = all(np.array_equal(top[i], brute_force(codes, int(queries[i]), args.k)) for i in range(20))
        radius_hits = float(np.mean([len(index.radius(int(q), args.radius)[0]) for q in few[:20]]))
    copy = statistics.median(times["copy"]) / COPIES
    rows = []
    for name, (_, answered) in items.items():
        median = statistics.median(times[name])
        per_query = median / abs(answered)
        rows.append({"item": name, "median_s": median, "per_query_s": per_query,
                     "queries_per_s": (answered / median) if answered > 0 else None, "ratio_to_copy": per_query / copy})
    labels = {
        "copy": "np.copyto of the packed array into a preallocated one (reference)",
        "np.copy": "np.copy of the packed array (allocating)",
        "scan": f"scan only: popcount(q XOR codes), {len(queries)} queries in blocks",
        "top-k": f"top-{args.k}, {len(queries)} queries in one call, memory-mapped index",
        "top-k mem": f"top-{args.k}, {len(queries)} queries in one call, in-memory arrays",
        "top-k 1by1": f"top-{args.k}, one call per query ({len(few)} queries)",
        "radius": f"radius {args.radius} (mean {radius_hits:.0f} hits), one call per query",
        "swar": "scan with the SWAR bit count (numpy < 2.0 fallback), 20 queries",
    }
    print(f"\n{args.n:,} random {args.bits}-bit codes, numpy {np.__version__}, "
          f"np.bitwise_count: {hasattr(np, 'bitwise_count')}, median of {args.rounds} rounds\n")
    print("| operation | ms per query (per copy) | queries/s | time / one copy of the array |\n|---|---:|---:|---:|")
    for row in rows:
        qps = "-" if row["queries_per_s"] is None else f"{row['queries_per_s']:,.0f}"
        print(f"| {labels[row['item']]} | {1e3 * row['per_query_s']:.3f} | {qps} | {row['ratio_to_copy']:.2f}x |")
    per_code = codes.itemsize
    print(f"\ntop-{args.k} identical to a brute-force (distance, index) ranking on 20 queries: {verified}")
    print(f"memory: {per_code} bytes per packed code ({per_code * args.n / 2 ** 20:.1f} MiB for {args.n:,}); saved "
          f"index {total_disk / args.n:.1f} bytes per entry (" + ", ".join(
              f"{name} {size / args.n:.1f}" for name, size in disk_bytes.items()) + "); distance block "
          f"{index_module.BLOCK_BYTES // 2 ** 20} MiB of uint8")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "n": args.n, "num_bits": args.bits, "queries": args.queries, "k": args.k, "radius": args.radius,
        "rounds": args.rounds, "rows": [{**row, "label": labels[row["item"]]} for row in rows],
        "verified_against_brute_force": verified, "mean_radius_hits": radius_hits,
        "bytes_per_code": per_code, "index_bytes_per_entry": total_disk / args.n,
        "index_file_bytes": disk_bytes, "chunk": index_module.CHUNK, "block_bytes": index_module.BLOCK_BYTES,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "seconds": time.time() - started,
        "command": " ".join(sys.argv),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__,
                    "bitwise_count": hasattr(np, "bitwise_count"), "load_average": os.getloadavg()},
    }, indent=2))


if __name__ == "__main__":
    main()
