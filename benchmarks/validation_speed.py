"""Inference speed, size and peak memory of the validation-stage model against the hashing-stage model (issue 17).

Both models label the same first `--sentences` sentences of an experiment's dev codes file (`codes/dev.jsonl` of
`python -m bitcode_allennlp.code_stage.experiment`): the hashing model from the words (PLM, hash layer, CRF / CKY),
the lightweight model from the codes (Eq. 9 embedding, one transformer layer, the same head). Both in eval mode,
under `torch.no_grad`, on `--threads` torch threads (default 2: the issue's 2 CPU cores), timed on two paths
(`--paths`): "instances", `model.forward_on_instances` (tensorizing, forward, decoding, human-readable output: what
`allennlp predict` runs per batch, without file I/O), and "tensors", `model(**tensors)` on tensor dicts built before
timing (forward and decoding to tag ids: the model's own cost, what a bulk pipeline that keeps tensors pays;
AllenNLP's generic per-instance tensorizing cost about as much as the whole lightweight model; on the CPU its
`forward_on_instances` now tensorizes a batch of codes instances at once, `common/batch_tensors.py`). Batches:
`token_budget` batches of at most B padded words (sorted by length, the same sentences in the same batches for both
models); every budget of `--budgets` is measured for each model and each model is credited with its best one.
Reports words/s per model and budget, the speed-up of the lightweight model at its best budget over the hashing
model at its best (target >= 100x), parameters (target <= 1% with MiniLM) and peak memory; prints a markdown table
and writes JSON.

Every (model, budget) runs in a fresh process (this one imports no torch, so the children inherit no large peak):
it loads the archive, builds the instances, times one warm-up on the first two batches, then `--rounds` passes
over all batches (more while they total under `--min-seconds`; the median pass is kept). Peak memory: the child's
`ru_maxrss` from `os.wait4` (the whole process: imports, archive loading, instances, all passes), and beside it
the peak during the timed passes alone (`VmHWM` after resetting it through `/proc/self/clear_refs` once loading is
done; absent where the kernel does not allow the reset).

    python benchmarks/validation_speed.py runs/exp_ner                      # an experiment folder
    python benchmarks/validation_speed.py runs/exp_pos --budgets 512,2048,8192 --sentences 1000 --out x.json
    python benchmarks/validation_speed.py runs/exp_pos --validation-archive runs/window/model.tar.gz  # another
Options: --budgets (256,1024,4096,16384), --sentences (500), --rounds (3), --min-seconds (2), --threads (2),
--paths (instances,tensors), --validation-archive (a lightweight model trained on the experiment's codes), --out.
"""
import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import common

STAGES = {"hashing": ("hashing_archive", "words → PLM"), "validation": ("validation_archive", "codes")}
TARGET_SPEEDUP = 100.0


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("experiment", type=Path, help="an experiment folder (bitcode_allennlp.code_stage.experiment)")
    parser.add_argument("--budgets", default="256,1024,4096,16384", help="padded words per batch, comma-separated")
    parser.add_argument("--sentences", type=int, default=500, help="first N sentences of codes/dev.jsonl")
    parser.add_argument("--rounds", type=int, default=3, help="timed passes at least (the median is kept)")
    parser.add_argument("--min-seconds", type=float, default=2.0, help="more passes (up to 200) until this total")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--paths", default="instances,tensors",
                        help="what is timed, comma-separated: instances (forward_on_instances), tensors (forward on "
                             "tensor dicts built before timing)")
    parser.add_argument("--validation-archive", type=Path,
                        help="a validation-stage archive trained on the experiment's codes, instead of its own "
                             "(e.g. CODE_ENCODER=window)")
    parser.add_argument("--out", type=Path, default=common.RESULTS / "validation_speed.json")
    parser.add_argument("--child", choices=sorted(STAGES), help=argparse.SUPPRESS)  # internal: one measurement
    parser.add_argument("--budget", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--path", choices=["instances", "tensors"], help=argparse.SUPPRESS)
    parser.add_argument("--child-out", type=Path, help=argparse.SUPPRESS)
    return common.parse_args(parser, argv)


def read_experiment(folder: Path, sentences: int) -> Dict[str, Any]:
    row = json.loads((folder / "experiment.json").read_text())
    lines = (folder / "codes" / "dev.jsonl").read_text().splitlines()
    row["dev_lines"] = [json.loads(line) for line in lines[:sentences] if line.strip()]
    return row


def archive_path(folder: Path, row: Dict[str, Any], stage: str) -> Path:
    """The stage's archive as experiment.json names it, or in the folder (`hashing/`, `validation/`) if moved."""
    named = Path(row[STAGES[stage][0]])
    return named if named.exists() else folder / stage / "model.tar.gz"


# --------------------------------------------------------------------------------------- child: one measurement

def build_batches(stage: str, archive, lines: List[Dict[str, Any]], budget: int):
    """The stage's instances of `lines` (words, or codes with the words as metadata), indexed, in token-budget
    batches of at most `budget` padded words (sorted by words: the same batches for both stages)."""
    from bitcode_allennlp.data.samplers.token_budget import TokenBudgetBatchSampler

    reader = archive.validation_dataset_reader
    if stage == "hashing":
        instances = [reader.text_to_instance(line["words"]) for line in lines]
    else:
        instances = [reader.text_to_instance(line["codes"], words=line["words"]) for line in lines]
    for instance in instances:
        reader.apply_token_indexers(instance)
    sampler = TokenBudgetBatchSampler(max_tokens=budget, count="padded", shuffle=False)
    groups = list(sampler.get_batch_indices(instances))
    return [[instances[i] for i in group] for group in groups], groups


def batch_runner(model, batches, path: str):
    """One call per batch, as `path` says: "instances" runs `model.forward_on_instances` (tensorizing, forward,
    decoding, human-readable output); "tensors" runs `model(**tensors)` on tensor dicts built here, before timing
    (forward and Viterbi / CKY decoding to tag ids, as a bulk pipeline that keeps tensors would)."""
    if path == "instances":
        return [lambda batch=batch: model.forward_on_instances(batch) for batch in batches]
    from allennlp.data import Batch

    tensors = []
    for batch in batches:
        indexed = Batch(batch)
        indexed.index_instances(model.vocab)
        tensors.append(indexed.as_tensor_dict())
    return [lambda t=t: model(**t) for t in tensors]


def time_passes(model, batches, rounds: int, min_seconds: float, path: str) -> List[float]:
    """Wall seconds of full passes over `batches` after a warm-up on the first two."""
    import torch

    model.eval()
    runs = batch_runner(model, batches, path)
    times: List[float] = []
    with torch.no_grad():
        for run in runs[:2]:
            run()
        while len(times) < rounds or (sum(times) < min_seconds and len(times) < 200):
            start = time.perf_counter()
            for run in runs:
                run()
            times.append(time.perf_counter() - start)
    return times


def child(args: argparse.Namespace) -> None:
    """Runs in the subprocess: one stage at one budget; writes its measurement as JSON to `--child-out`."""
    import torch
    from allennlp.models.archival import load_archive

    import bitcode_allennlp.plugin  # noqa: F401
    from bitcode_allennlp.training.callbacks import count_parameters

    torch.set_num_threads(args.threads)
    row = read_experiment(args.experiment, args.sentences)
    named = args.validation_archive if args.child == "validation" and args.validation_archive else None
    archive = load_archive(str(named or archive_path(args.experiment, row, args.child)))
    batches, groups = build_batches(args.child, archive, row["dev_lines"], args.budget)
    rss_loaded = common.proc_status_mb("VmRSS")
    reset = common.reset_peak_rss()
    times = time_passes(archive.model, batches, args.rounds, args.min_seconds, args.path)
    words = sum(len(line["words"]) for line in row["dev_lines"])
    seconds = statistics.median(times)
    args.child_out.write_text(json.dumps({
        "stage": args.child, "path": args.path, "budget": args.budget, "words": words,
        "sentences": len(row["dev_lines"]),
        "batches": len(groups), "largest_batch": max(len(g) for g in groups),
        "groups_digest": hashlib.sha1(str(groups).encode()).hexdigest(),
        "passes": len(times), "seconds": seconds, "words_per_s": words / seconds,
        "parameters": count_parameters(archive.model)["parameters"], "threads": torch.get_num_threads(),
        "rss_after_load_mb": rss_loaded, "timed_peak_rss_mb": common.proc_status_mb("VmHWM") if reset else None}))


# ----------------------------------------------------------------------------------------- parent: orchestration

def measure(args: argparse.Namespace, stage: str, budget: int, path: str) -> Dict[str, Any]:
    """One (stage, budget) in a fresh process; its result plus the process's peak RSS (`ru_maxrss`)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        command = [sys.executable, str(Path(__file__).resolve()), str(args.experiment), "--child", stage,
                   "--budget", str(budget), "--child-out", str(out), "--sentences", str(args.sentences),
                   "--rounds", str(args.rounds), "--min-seconds", str(args.min_seconds),
                   "--threads", str(args.threads), "--path", path]
        if args.validation_archive:
            command += ["--validation-archive", str(args.validation_archive)]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        stderr = process.stderr.read() if process.stderr else ""
        code, peak_rss_mb = common.wait_peak_rss_mb(process)
        if code != 0:
            raise SystemExit(f"{stage} ({path}) at budget {budget} failed:\n{stderr[-4000:]}")
        result = json.loads(out.read_text())
    result["peak_rss_mb"] = peak_rss_mb
    print(f"  {path:9s} {stage:10s} budget {budget:6d}: {result['words_per_s']:>12,.0f} words/s, "
          f"{result['batches']} batches, peak RSS {result['peak_rss_mb']:,.0f} MB", flush=True)
    return result


def summarize(results: Dict[str, List[Dict[str, Any]]]) -> Dict[str, Any]:
    """The best budget of each stage and the ratios between the stages at their best."""
    best = {stage: max(rows, key=lambda r: r["words_per_s"]) for stage, rows in results.items()}
    hashing, light = best["hashing"], best["validation"]
    return {"best": {stage: {k: row[k] for k in ("budget", "words_per_s", "peak_rss_mb", "timed_peak_rss_mb",
                                                   "parameters")} for stage, row in best.items()},
            "speedup": light["words_per_s"] / hashing["words_per_s"], "target_speedup": TARGET_SPEEDUP,
            "parameter_ratio": light["parameters"] / hashing["parameters"],
            "peak_rss_ratio": light["peak_rss_mb"] / hashing["peak_rss_mb"]}


def mb(value: Optional[float]) -> str:
    return "–" if value is None else f"{value:,.0f}"


def table(results: Dict[str, List[Dict[str, Any]]], summary: Dict[str, Any], path: str) -> str:
    """One path's rows and its speed-up line."""
    table_rows = []
    for stage, rows in results.items():
        for r in rows:
            mark = " **best**" if r["budget"] == summary["best"][stage]["budget"] else ""
            table_rows.append([f"{stage} stage", STAGES[stage][1], f"{r['parameters']:,}", f"{r['budget']:,}{mark}",
                               r["batches"], f"{r['words_per_s']:,.0f}", f"{r['seconds']:.3f}", r["passes"],
                               mb(r["rss_after_load_mb"]), mb(r["timed_peak_rss_mb"]), mb(r["peak_rss_mb"])])
    lines = [common.markdown_table(["model", "input", "parameters", "budget (words)", "batches", "words/s",
                                    "median pass (s)", "passes", "RSS after loading (MB)", "peak RSS in passes (MB)",
                                    "peak RSS (MB)"], table_rows, "ll" + "r" * 9)]
    best = summary["best"]
    lines.append("")
    lines.append(f"{path}: speed-up {summary['speedup']:.1f}× at the best budget of each "
                 f"({best['validation']['budget']:,} "
                 f"vs {best['hashing']['budget']:,} words; target ≥ {TARGET_SPEEDUP:.0f}×: "
                 f"{'met' if summary['speedup'] >= TARGET_SPEEDUP else 'NOT met'}); parameters "
                 f"{100 * summary['parameter_ratio']:.2f}% of the hashing model (target ≤ 1%); peak RSS "
                 f"{mb(best['validation']['peak_rss_mb'])} vs {mb(best['hashing']['peak_rss_mb'])} MB")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> None:
    args = parse_args(argv)
    if args.child:
        child(args)
        return
    row = read_experiment(args.experiment, args.sentences)
    budgets = [int(b) for b in args.budgets.split(",") if b.strip()]
    words = sum(len(line["words"]) for line in row["dev_lines"])
    print(f"{len(row['dev_lines'])} dev sentences ({words:,} words) of {args.experiment}, budgets {budgets}, "
          f"{args.threads} torch threads, one fresh process per model and budget", flush=True)
    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    results = {path: {stage: [] for stage in STAGES} for path in paths}  # path → stage → one row per budget
    before = common.machine(threads=args.threads, date=time.strftime("%Y-%m-%d %H:%M:%S %Z"))
    for budget in budgets:  # the stages alternate, so slow drifts of the machine's load hit both alike
        for path in paths:
            for stage in STAGES:
                results[path][stage].append(measure(args, stage, budget, path))
            digests = {results[path][stage][-1]["groups_digest"] for stage in STAGES}
            assert len(digests) == 1, f"the stages got different batches at budget {budget}"
    summaries = {path: summarize(results[path]) for path in paths}
    for path in paths:
        print("\n" + table(results[path], summaries[path], path))
    common.write_json(args.out, {
        "experiment": str(args.experiment), "task": row.get("task"), "sentences": len(row["dev_lines"]),
        "validation_archive": str(args.validation_archive or row.get("validation_archive")),
        "words": words, "budgets": budgets, "rounds": args.rounds, "min_seconds": args.min_seconds,
        "summaries": summaries, "results": results, "machine": before,
        "load_average_after": os.getloadavg(), "command": " ".join(sys.argv)})
    print(f"\nwritten: {args.out}")


if __name__ == "__main__":
    main()
