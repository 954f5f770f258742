#!/usr/bin/env python
"""Tree CRF speed and memory: ``bitcode_allennlp.structs`` against supar's ``ConstituencyCRF`` (a script, not a test).

Both implementations get IDENTICAL random float32 span scores ``(batch, N+1, N+1)`` and lengths, in two cases:

  batch32   32 sentences, lengths uniform in [10, 60]
  long200   one 200-word sentence

and three operations:

  log_z      log-partition only                 ours: ``inside``         supar: ``ConstituencyCRF(...).log_partition``
  log_z+bwd  log-partition + backward (training) ours: ``inside`` + ``.backward()`` (outside pass)
                                                 supar: ``log_partition`` + ``.backward()`` (autograd)
  cky        best score + span lists (decoding)  ours: ``cky``            supar: ``.max`` + ``.argmax``

Each call gets a fresh ``clone()`` of the scores (supar calls ``requires_grad_`` on its input) and a fresh
``ConstituencyCRF`` (its properties are cached). Timing: after warm-up, ``--repeats`` rounds; in every round each
(case, operation) is timed once per implementation, the order ours/supar alternating between rounds, so machine
noise hits both alike. Reported: median seconds per call -> sentences per second, and the ratio ours / supar
(throughput; > 1 means ours is faster). ``torch.set_num_threads(--threads)`` (default 1: the machine is shared).

Agreement (same float32 scores): max relative difference of log Z, max absolute difference of the span marginals,
whether the CKY trees are identical.

Peak memory: one extra, untimed call per (case, operation, implementation) under ``torch.profiler`` with
``profile_memory=True``; the "[memory]" events are every allocation (+bytes) and free (-bytes) of the CPU tensor
allocator, so their running sum in time order is the bytes of live tensors, and its maximum, relative to the start
of the call, is the peak extra tensor memory of the call (scores and their clone excluded: made before). This counts
torch tensors exactly (tracemalloc does not see them; RSS would count allocator caching and Python objects).

If supar cannot be imported, a straightforward reference (supar-1.0-style inside with autograd, plain-Python CKY)
takes its place and the output says so.

Usage (repository root, venv active): ``python benchmarks/tree_crf.py [--repeats 9] [--threads 1]``.
Writes ``runs/benchmarks/tree_crf.json`` (or ``--out``) and prints a markdown table.
"""
import argparse
import statistics
import sys
import time

import torch

import common

ROOT = common.ROOT
sys.path.insert(0, str(ROOT))

from bitcode_allennlp.structs.tree_crf import cky, inside, stripe  # noqa: E402

OPS = ["log_z", "log_z+bwd", "cky"]


# ---------------------------------------------------------------------------------------------- the competitor
def load_supar():
    """supar's ConstituencyCRF, or (None, why)."""
    try:
        import supar
        from supar.structs import ConstituencyCRF
    except Exception as error:  # noqa: BLE001 -- report any import failure verbatim
        return None, f"{type(error).__name__}: {error}"
    return (ConstituencyCRF, getattr(supar, "__version__", "?")), None


class SuparImpl:
    def __init__(self, crf, version):
        self.crf, self.label = crf, f"supar {version} ConstituencyCRF"

    def log_z(self, x, lengths):
        return self.crf(x, lengths).log_partition

    def log_z_bwd(self, x, lengths):
        x.requires_grad_()
        self.crf(x, lengths).log_partition.sum().backward()
        return x.grad

    def cky(self, x, lengths):
        dist = self.crf(x, lengths)
        return dist.max, dist.argmax


class ReferenceImpl:
    """Straightforward reference: autograd through an in-place inside chart (supar 1.0 style), Python CKY."""
    label = "reference (autograd inside, Python CKY)"

    @staticmethod
    def _chart(x, lengths, max_fn):
        size = x.size(1)
        x = x.permute(1, 2, 0)  # (N+1, N+1, batch)
        s = x.new_zeros(x.shape)  # (N+1, N+1, batch)
        s.diagonal(1).copy_(x.diagonal(1))
        for w in range(2, size):
            n = size - w
            a = stripe(s, n, w - 1, (0, 1)) + stripe(s, n, w - 1, (1, w), False)  # (n, w-1, batch)
            s.diagonal(w).copy_((max_fn(a) + x.diagonal(w).t()).t())  # (batch, n)
        return s[0, lengths, torch.arange(len(lengths))]  # (batch,)

    def log_z(self, x, lengths):
        return self._chart(x, lengths, lambda a: a.logsumexp(1))

    def log_z_bwd(self, x, lengths):
        x.requires_grad_()
        self.log_z(x, lengths).sum().backward()
        return x.grad

    def cky(self, x, lengths):
        best, trees = [], []
        for b, n in enumerate(lengths.tolist()):
            sc = x[b].tolist()
            chart, split = {}, {}
            for w in range(1, n + 1):
                for i in range(n - w + 1):
                    j = i + w
                    if w == 1:
                        chart[i, j] = sc[i][j]
                        continue
                    k = max(range(i + 1, j), key=lambda k: chart[i, k] + chart[k, j])
                    chart[i, j], split[i, j] = chart[i, k] + chart[k, j] + sc[i][j], k
            spans, stack = [], [(0, n)]
            while stack:
                i, j = stack.pop()
                spans.append((i, j))
                if j - i > 1:
                    stack += [(split[i, j], j), (i, split[i, j])]
            best.append(chart[0, n])
            trees.append(spans)
        return torch.tensor(best), trees


class OursImpl:
    label = "bitcode_allennlp.structs"

    def log_z(self, x, lengths):
        return inside(x, lengths)

    def log_z_bwd(self, x, lengths):
        x.requires_grad_()
        inside(x, lengths).sum().backward()
        return x.grad

    def cky(self, x, lengths):
        return cky(x, lengths)


def run(impl, op, x, lengths):
    return {"log_z": impl.log_z, "log_z+bwd": impl.log_z_bwd, "cky": impl.cky}[op](x, lengths)


def call(impl, op, x, lengths):
    return run(impl, op, x.clone(), lengths)


# ---------------------------------------------------------------------------------------------- measurements
def make_cases(seed):
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.randint(10, 61, (32,), generator=gen)  # (32,)
    batch = torch.randn(32, int(lengths.max()) + 1, int(lengths.max()) + 1, generator=gen)  # (32, N+1, N+1)
    long = torch.randn(1, 201, 201, generator=gen)  # (1, 201, 201)
    return {"batch32": (batch, lengths), "long200": (long, torch.tensor([200]))}


def peak_tensor_bytes(fn):
    """Peak bytes of live CPU tensors allocated during fn(), from torch.profiler memory events."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = sorted((e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"),
                    key=lambda e: e.start_ns())
    live = peak = 0
    for event in events:
        live += event.nbytes()
        peak = max(peak, live)
    return peak


def agreement(ours, other, x, lengths):
    ours_z, other_z = call(ours, "log_z", x, lengths), call(other, "log_z", x, lengths).detach()
    ours_m, other_m = call(ours, "log_z+bwd", x, lengths), call(other, "log_z+bwd", x, lengths)
    (_, ours_trees), (_, other_trees) = call(ours, "cky", x, lengths), call(other, "cky", x, lengths)
    other_trees = [[tuple(span) for span in tree] for tree in other_trees]
    return {"log_z_max_rel_diff": ((ours_z - other_z).abs() / other_z.abs()).max().item(),
            "marginals_max_abs_diff": (ours_m - other_m).abs().max().item(),
            "cky_trees_identical": ours_trees == other_trees}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reference", action="store_true", help="compare against the reference, not supar")
    parser.add_argument("--out", default=str(common.RESULTS / "tree_crf.json"))
    return common.parse_args(parser)


def time_calls(impls, cases, repeats: int, warmup: int):
    """Seconds per call of every (case, op, implementation), over `repeats` rounds after `warmup` rounds; the
    order of the implementations alternates between rounds."""
    for _ in range(warmup):
        for x, lengths in cases.values():
            for op in OPS:
                for impl in impls.values():
                    call(impl, op, x, lengths)
    times = {(case, op, name): [] for case in cases for op in OPS for name in impls}
    for r in range(repeats):
        for case, (x, lengths) in cases.items():
            for op in OPS:
                for name in (["ours", "other"] if r % 2 == 0 else ["other", "ours"]):
                    start = time.perf_counter()
                    call(impls[name], op, x, lengths)
                    times[case, op, name].append(time.perf_counter() - start)
    return times


def measure(impls, cases, times):
    """Per (case, op): median times and throughput, peak tensor memory; per case: agreement of the two."""
    rows, memory, agree = [], [], {}
    for case, (x, lengths) in cases.items():
        agree[case] = agreement(impls["ours"], impls["other"], x, lengths)
        for op in OPS:
            med = {name: statistics.median(times[case, op, name]) for name in impls}
            rows.append({"case": case, "op": op, "sentences": len(lengths),
                         "ours_ms": 1e3 * med["ours"], "other_ms": 1e3 * med["other"],
                         "ours_sent_per_s": len(lengths) / med["ours"], "other_sent_per_s": len(lengths) / med["other"],
                         "speed_ratio": med["other"] / med["ours"],
                         "ours_times_s": times[case, op, "ours"], "other_times_s": times[case, op, "other"]})
            peaks = {}
            for name, impl in impls.items():
                clone = x.clone()
                peaks[name] = peak_tensor_bytes(lambda: run(impl, op, clone, lengths))
            memory.append({"case": case, "op": op, "ours_peak_mb": peaks["ours"] / 2 ** 20,
                           "other_peak_mb": peaks["other"] / 2 ** 20})
    return rows, memory, agree


def report(args, impls, other_name: str, rows, memory, agree) -> str:
    lines = [f"Tree CRF, float32, {args.threads} thread(s), median of {args.repeats} interleaved repeats; "
             f"ours = {impls['ours'].label}, {other_name} = {impls['other'].label}.", "",
             common.markdown_table(
                 ["case", "op", "ours sent/s", f"{other_name} sent/s", "ours ms", f"{other_name} ms",
                  f"speed ours/{other_name}"],
                 [[r["case"], r["op"], f"{r['ours_sent_per_s']:.0f}", f"{r['other_sent_per_s']:.0f}",
                   f"{r['ours_ms']:.1f}", f"{r['other_ms']:.1f}", f"{r['speed_ratio']:.2f}x"] for r in rows],
                 "llrrrrr"), "",
             common.markdown_table(
                 ["case", "op", "ours peak tensor MiB", f"{other_name} peak tensor MiB"],
                 [[m["case"], m["op"], f"{m['ours_peak_mb']:.2f}", f"{m['other_peak_mb']:.2f}"] for m in memory],
                 "llrr"), "",
             common.markdown_table(
                 ["case", "log Z max rel diff", "marginals max abs diff", "CKY trees identical"],
                 [[case, f"{a['log_z_max_rel_diff']:.1e}", f"{a['marginals_max_abs_diff']:.1e}",
                   a["cky_trees_identical"]] for case, a in agree.items()], "lrrl")]
    return "\n".join(lines)


def main():
    args = parse_args()
    torch.set_num_threads(args.threads)

    loaded, why = (None, "--reference given") if args.reference else load_supar()
    other = SuparImpl(*loaded) if loaded else ReferenceImpl()
    if why:
        print(f"supar could not be imported ({why}); comparing against a {other.label} instead\n")
    cases = make_cases(args.seed)
    impls = {"ours": OursImpl(), "other": other}
    times = time_calls(impls, cases, args.repeats, args.warmup)
    rows, memory, agree = measure(impls, cases, times)
    print(report(args, impls, "supar" if loaded else "reference", rows, memory, agree))

    common.write_json(args.out, {
        "config": vars(args), "other": other.label, "supar_import_error": why,
        "machine": common.machine(torch_info=True), "dtype": "float32", "timings": rows, "peak_memory": memory,
        "agreement": agree,
        "memory_method": "torch.profiler profile_memory: peak of the running sum of [memory] events"})
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
