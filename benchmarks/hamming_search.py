#!/usr/bin/env python
"""Hamming search over random codes: the numpy scan, FAISS `IndexBinaryFlat` and `IndexBinaryMultiHash` side by side
(`bitcode_allennlp.bits.index.HammingIndex`, what `allennlp bits search` and `bits precision` run), with a check that
all three return the same arrays (a script, not a test).

For each size n of `--sizes` (default 1,000,000 and 100,000,000), n random `--bits`-bit codes (seed 0) are written
once to `--work`/codes_<K>bit_<n>.npy (uint64, 8 bytes per code, reused by later runs) and memory-mapped. Each
index type then runs in a fresh process (so that its memory is its own), on the memory-mapped codes:

  numpy      the numpy scan of the packed uint64 codes (no build)
  flat       FAISS IndexBinaryFlat (codes padded to 32 bits), exact k-NN by radius searches re-ranked by
             (distance, entry index)
  multihash  FAISS IndexBinaryMultiHash (defaults of `allennlp bits index`: one table keyed by 24 bits for K = 24;
             `--hash-tables`, `--hash-bits`)

Measured per index type (median of `--rounds` rounds after one warm-up): build seconds; k-NN queries/s
(`index.search(queries, --k)`, the queries in one call); radius queries/s (`index.radius(q, --radius)`, one call
per query, as `bits search --radius`); for flat also FAISS's own `search` with k, whose ties are not ordered (what
the re-ranking costs); the resident memory the index adds (RSS after the build minus before), and the process's
peak RSS (VmHWM: Python and the imports, about 0.4 GB when the package imports torch, and the memory-mapped code
pages read, which count). The scans (numpy, flat) read all n codes per query, so
they are timed on the first max(10, min(queries, `--scan-budget` / n)) queries (all 1,000 at 1M, 10 at 100M);
multihash on all `--queries` (seed 1, random codes, not taken from the index).

Checked: the k-NN indices and distances, and every radius result, of numpy, flat and multihash are equal on the
queries they share (flat and multihash on the scans' subset; numpy on its own). Unequal results print FAILED and
the script exits with status 1.

FAISS runs on `--threads` threads (default 1, as the numpy scan; `--threads 0`: every core).

Usage (repository root, venv active):

    python benchmarks/hamming_search.py                                   # 1M and 100M: ~1 GB under --work
    python benchmarks/hamming_search.py --sizes 100000 --queries 100 --rounds 1 --out /tmp/smoke.json   # smoke

Writes `runs/benchmarks/hamming_search.json` (or `--out`) and prints a markdown table.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import common  # noqa: E402  (benchmarks/common.py: this script's folder is on sys.path)

KINDS = ("numpy", "flat", "multihash")
FILL_CHUNK = 1 << 20


def codes_file(work: Path, n: int, num_bits: int) -> Path:
    """`work`/codes_<K>bit_<n>.npy: n random K-bit codes (uint64, chunk i drawn with seed (0, i)), written once."""
    path = work / f"codes_{num_bits}bit_{n}.npy"
    done = path.with_suffix(".done")
    if path.is_file() and done.is_file():
        return path
    work.mkdir(parents=True, exist_ok=True)
    codes = np.lib.format.open_memmap(path, mode="w+", dtype=np.uint64, shape=(n,))  # (n,)
    for chunk, start in enumerate(range(0, n, FILL_CHUNK)):
        stop = min(n, start + FILL_CHUNK)
        codes[start:stop] = np.random.default_rng([0, chunk]).integers(0, 1 << num_bits, stop - start,
                                                                         dtype=np.uint64)
    codes.flush()
    del codes
    done.write_text("complete\n")
    return path


def memory_mib() -> Dict[str, float]:
    """Resident and peak resident memory of this process (VmRSS, VmHWM; both reset by exec) in MiB."""
    values = {}
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(("VmRSS:", "VmHWM:")):
                values[line.split(":")[0]] = int(line.split()[1]) / 1024
    return {"rss": values["VmRSS"], "peak": values["VmHWM"]}


def median_time(function, rounds: int) -> float:
    function()  # warm-up: page cache of the memory map, allocations
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def worker(args: argparse.Namespace) -> None:
    """One index type in this process: build, time, save results under --result-dir."""
    from bitcode_allennlp.bits.faiss_index import import_faiss, pack_codes
    from bitcode_allennlp.bits.index import HammingIndex

    if args.kind != "numpy":
        import_faiss()  # before the memory is measured: its libraries are not the index
    codes = np.load(args.codes, mmap_mode="r")  # (n,) memory-mapped
    n = codes.shape[0]
    queries = np.load(args.queries_file)[: args.timed_queries]  # (q,)
    zeros = np.broadcast_to(np.int32(0), (n,))  # sentence ids and positions: not used by search, no memory
    index = HammingIndex(codes, args.bits, zeros, zeros, [{"words": []}])
    before = memory_mib()
    start = time.perf_counter()
    params = {"hash_tables": args.hash_tables, "hash_bits": args.hash_bits} if args.kind == "multihash" else {}
    index.build_search_index(args.kind, threads=args.threads, **params)
    build = time.perf_counter() - start
    after = memory_mib()
    knn = median_time(lambda: index.search(queries, args.k), args.rounds)

    def radius_all():
        return [index.radius(int(query), args.radius) for query in queries.tolist()]

    radius = median_time(radius_all, args.rounds)
    result: Dict[str, Any] = {
        "kind": args.kind, "n": n, "timed_queries": int(queries.shape[0]), "build_s": build,
        "knn_s": knn, "knn_queries_per_s": queries.shape[0] / knn,
        "radius_s": radius, "radius_queries_per_s": queries.shape[0] / radius,
        "index_memory_mib": after["rss"] - before["rss"], "rss_before_build_mib": before["rss"],
        "params": index.search_index.params if index.search_index is not None else {},
    }
    if args.kind == "flat":  # FAISS's own k-NN: no tie order, no radius searches
        packed = pack_codes(queries, args.bits)  # (q, 4)
        with index.search_index.thread_count():
            raw = median_time(lambda: index.search_index.index.search(packed, args.k), args.rounds)
        result["faiss_search_queries_per_s"] = queries.shape[0] / raw
    top, distances = index.search(queries, args.k)  # (q, k), (q, k)
    found = radius_all()
    out = Path(args.result_dir)
    np.save(out / f"{args.kind}.top.npy", top)
    np.save(out / f"{args.kind}.distances.npy", distances)
    np.save(out / f"{args.kind}.radius_lengths.npy", np.array([len(entries) for entries, _ in found]))
    np.save(out / f"{args.kind}.radius_entries.npy", np.concatenate([entries for entries, _ in found]))
    np.save(out / f"{args.kind}.radius_distances.npy", np.concatenate([dist for _, dist in found]))
    result["mean_radius_hits"] = float(np.mean([len(entries) for entries, _ in found]))
    result["peak_rss_mib"] = memory_mib()["peak"]
    (out / f"{args.kind}.json").write_text(json.dumps(result))


def compare(result_dir: Path, kinds: List[str], sizes: Dict[str, int]) -> Dict[str, bool]:
    """Whether each later kind's arrays equal the first kind's on the queries both timed."""
    checks = {}
    reference = kinds[0]
    for kind in kinds[1:]:
        shared = min(sizes[reference], sizes[kind])
        equal = True
        for name in ("top", "distances"):
            a = np.load(result_dir / f"{reference}.{name}.npy")[:shared]
            b = np.load(result_dir / f"{kind}.{name}.npy")[:shared]
            equal &= bool(np.array_equal(a, b))
        lengths = {k: np.load(result_dir / f"{k}.radius_lengths.npy")[:shared] for k in (reference, kind)}
        equal &= bool(np.array_equal(lengths[reference], lengths[kind]))
        total = int(lengths[reference].sum())
        for name in ("radius_entries", "radius_distances"):
            equal &= bool(np.array_equal(np.load(result_dir / f"{reference}.{name}.npy")[:total],
                                         np.load(result_dir / f"{kind}.{name}.npy")[:total]))
        checks[f"{kind} == {reference} ({shared} queries)"] = equal
    return checks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000000,100000000", help="comma-separated numbers of codes")
    parser.add_argument("--bits", type=int, default=24)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--radius", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scan-budget", type=float, default=1e9,
                        help="codes a scan (numpy, flat) reads per round: its timed queries are budget / n")
    parser.add_argument("--threads", type=int, default=1, help="FAISS threads (0: every core)")
    parser.add_argument("--hash-tables", type=int, default=None, help="multihash tables (default: bits index's)")
    parser.add_argument("--hash-bits", type=int, default=None, help="multihash key bits (default: bits index's)")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "bitcode_hamming_search",
                        help="where the codes files are written and kept (100M codes: 800 MB)")
    parser.add_argument("--out", type=Path, default=common.RESULTS / "hamming_search.json")
    for name in ("--kind", "--codes", "--queries-file", "--result-dir"):
        parser.add_argument(name, help=argparse.SUPPRESS)  # a worker process
    parser.add_argument("--timed-queries", type=int, help=argparse.SUPPRESS)
    args = common.parse_args(parser)
    if args.kind:
        worker(args)
        return
    started = time.time()
    sizes = [int(float(size)) for size in args.sizes.split(",") if size.strip()]
    if not sizes or min(sizes) < 1:
        parser.error(f"--sizes: positive numbers of codes, got {args.sizes!r}")
    queries = np.random.default_rng(1).integers(0, 1 << args.bits, args.queries, dtype=np.uint64)  # (q,)
    rows: List[Dict[str, Any]] = []
    checks: Dict[str, Dict[str, bool]] = {}
    for n in sizes:
        path = codes_file(args.work, n, args.bits)
        scan_queries = max(10, min(args.queries, int(args.scan_budget // n)))
        timed = {"numpy": scan_queries, "flat": scan_queries, "multihash": args.queries}
        with tempfile.TemporaryDirectory(dir=args.work) as result_dir:
            np.save(Path(result_dir) / "queries.npy", queries)
            for kind in KINDS:
                command = [sys.executable, __file__, "--kind", kind, "--codes", str(path), "--queries-file",
                           str(Path(result_dir) / "queries.npy"), "--result-dir", result_dir,
                           "--timed-queries", str(timed[kind]), "--bits", str(args.bits), "--k", str(args.k),
                           "--radius", str(args.radius), "--rounds", str(args.rounds), "--threads", str(args.threads)]
                for name in ("hash_tables", "hash_bits"):
                    if getattr(args, name) is not None:
                        command += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
                print(f"n = {n:,}: {kind} ...", file=sys.stderr, flush=True)
                subprocess.run(command, check=True)
                rows.append(json.loads((Path(result_dir) / f"{kind}.json").read_text()))
            checks[str(n)] = compare(Path(result_dir), list(KINDS), timed)
    print(f"\nrandom {args.bits}-bit codes (memory-mapped), k = {args.k}, radius {args.radius}, FAISS threads "
          f"{args.threads or 'all'}, median of {args.rounds} rounds\n")
    print("| codes | index | build s | index MiB | RSS before build MiB | peak RSS MiB | queries timed | "
          f"k-NN queries/s | radius-{args.radius} queries/s | mean radius hits |\n"
          "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['n']:,} | {row['kind']} | {row['build_s']:.2f} | {row['index_memory_mib']:,.0f} | "
              f"{row['rss_before_build_mib']:,.0f} | {row['peak_rss_mib']:,.0f} | {row['timed_queries']:,} | "
              f"{row['knn_queries_per_s']:,.1f} | {row['radius_queries_per_s']:,.1f} | "
              f"{row['mean_radius_hits']:,.1f} |")
    for row in rows:
        if "faiss_search_queries_per_s" in row:
            print(f"\nn = {row['n']:,}: FAISS IndexBinaryFlat.search alone (ties unordered): "
                  f"{row['faiss_search_queries_per_s']:,.1f} queries/s")
    failed = [f"n = {n}: {name}" for n, named in checks.items() for name, equal in named.items() if not equal]
    print("\nresults equal: " + ("yes, " + "; ".join(f"n = {int(n):,}: " + ", ".join(named)
                                                       for n, named in checks.items()) if not failed
                                 else "FAILED: " + "; ".join(failed)))
    import faiss

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "sizes": sizes, "num_bits": args.bits, "queries": args.queries, "k": args.k, "radius": args.radius,
        "rounds": args.rounds, "scan_budget": args.scan_budget, "threads": args.threads, "rows": rows,
        "results_equal": checks, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "seconds": time.time() - started, "command": " ".join(sys.argv),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__,
                    "faiss": faiss.__version__, "load_average": os.getloadavg()},
    }, indent=2))
    print(f"\nwritten: {args.out}")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
