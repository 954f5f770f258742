#!/usr/bin/env python
"""Peak memory of the span parser on one long sentence (a script, not a test).

The parser is `hash_span_parser` built from ``training_configs/parse_hash.jsonnet`` exactly as ``allennlp train``
builds it (the config's variables come from the environment; the script sets ``PLM`` and ``TRAIN_DATA``). For
each PLM, each sentence length (default 100, 200 and 300 words) and each phase, a fresh subprocess

  1. builds the model (vocabulary read once beforehand, in another subprocess, from ``--data``) and one sentence
     of n real words from ``--data`` (cycled) under a synthetic gold tree, ``(S (NP (NN w) x 10) x n/10)``
     (the tree CRF sums over all trees whatever the gold tree is; the labels exist in every PTB vocabulary);
  2. records the RSS after loading (``VmRSS``, model and tensors made), then resets the kernel's high-water mark
     (``/proc/self/clear_refs``), so that what the step needs is measured and not what loading needed;
  3. runs the phase once:

     train   forward + backward in training mode: two dropout views, tree CRF loss (inside, outside by autograd),
             label cross-entropy, β·hash loss, gradients (no optimizer step);
     cky     inference: eval mode, ``torch.no_grad()``: one view, span and label scores, CKY, tree building;

  4. reports the peak RSS from ``resource.getrusage`` (whole process) and from ``VmHWM`` (since the reset), the
     increase of the step's peak over the RSS after loading, and with ``--device cuda`` torch's allocator peak
     (``torch.cuda.max_memory_allocated`` minus what was allocated before the step, and the reserved peak).

The parent process imports no torch, so a child does not start with a large inherited peak (Linux carries a
parent's ``ru_maxrss`` into a child). The increase counts the gradients (allocated by the step's backward), the
activations of both views and allocator slack; ``params_mb`` in the JSON is the size of the weights (and so of
one set of gradients).

Usage (repository root, venv active)::

    python benchmarks/parser_memory.py                         # tiny-bert fixture, fixture data: ~1.5 minutes
    python benchmarks/parser_memory.py --plm minilm \\
        --data ../shared/data/const/craft/craft-train.tree      # real MiniLM-L6, CRAFT labels: ~4 minutes
    python benchmarks/parser_memory.py --plm tiny-bert,minilm --lengths 100,200,300,500 --device cuda

Prints a markdown table and writes ``benchmarks/results/parser_memory.json`` (or ``--out``).
"""
import argparse
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "training_configs" / "parse_hash.jsonnet"
DEFAULT_DATA = ROOT / "fixtures" / "data" / "ptb" / "craft_train.tree"
PHASES = ("train", "cky")
MB = 2 ** 20


def plm_path(name: str) -> str:
    if name == "tiny-bert":
        return str(ROOT / "fixtures" / "transformers" / "tiny-bert")
    if name == "minilm":
        sys.path.insert(0, str(ROOT))
        from bitcode_allennlp.plm import minilm_path  # stdlib only until called

        return minilm_path()
    return name


def proc_status(field: str) -> int:
    """A `/proc/self/status` field in bytes (e.g. VmRSS, VmHWM); -1 off Linux."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return -1


def reset_peak_rss() -> bool:
    """Resets VmHWM to the current RSS (Linux); False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
        return True
    except OSError:
        return False


def maxrss() -> int:
    """Peak RSS of this process in bytes, from getrusage (kilobytes on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


# ---------------------------------------------------------------------------------------------- subprocesses
def setup_environment(spec: dict) -> None:
    os.environ.update({"PLM": spec["plm_path"], "TRAIN_DATA": spec["data"], "TOKEN_POLICY": "repair",
                       "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    sys.path.insert(0, str(ROOT))


def vocabulary_child(spec: dict) -> dict:
    """Reads `--data` once: saves the vocabulary and the first words for the measuring children."""
    setup_environment(spec)
    from allennlp.common import Params
    from allennlp.data import DatasetReader, Vocabulary

    import bitcode_allennlp.plugin  # noqa: F401

    params = Params.from_file(str(CONFIG))
    reader = DatasetReader.from_params(params.pop("dataset_reader"))
    instances = list(reader.read(spec["data"]))
    vocab = Vocabulary.from_instances(instances)
    vocab.save_to_files(str(Path(spec["vocab_dir"], "vocabulary")))
    words = [word for instance in instances for word in instance["metadata"]["words"]]
    Path(spec["vocab_dir"], "words.json").write_text(json.dumps(words[: spec["max_words"]]))
    return {"trees": len(instances), "labels": vocab.get_vocab_size("span_labels")}


def measure_child(spec: dict) -> dict:
    """One phase on one sentence, in this fresh process."""
    setup_environment(spec)
    import torch
    from allennlp.common import Params
    from allennlp.data import Batch, DatasetReader, Vocabulary
    from allennlp.models import Model
    from allennlp.nn import util
    from nltk import Tree

    import bitcode_allennlp.plugin  # noqa: F401

    torch.set_num_threads(spec["threads"])
    torch.manual_seed(0)
    cuda = spec["device"] == "cuda"
    params = Params.from_file(str(CONFIG))
    reader = DatasetReader.from_params(params.pop("dataset_reader"))
    vocab = Vocabulary.from_files(str(Path(spec["vocab_dir"], "vocabulary")))
    model = Model.from_params(vocab=vocab, params=params.pop("model"))
    model = model.to(spec["device"])
    pool = json.loads(Path(spec["vocab_dir"], "words.json").read_text())
    n = spec["words"]
    words = [pool[i % len(pool)] for i in range(n)]
    gold = None
    if spec["phase"] == "train":
        gold = Tree("S", [Tree("NP", [Tree("NN", [w]) for w in words[i : i + 10]]) for i in range(0, n, 10)])
    instance = reader.text_to_instance(words, gold_tree=gold)
    reader.apply_token_indexers(instance)
    batch = Batch([instance])
    batch.index_instances(vocab)
    tensors = util.move_to_device(batch.as_tensor_dict(), torch.device(spec["device"]))
    pieces = int(tensors["tokens"]["tokens"]["token_ids"].shape[1])

    rss_loaded = proc_status("VmRSS")
    maxrss_before = maxrss()
    reset = reset_peak_rss()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        allocated_before = torch.cuda.memory_allocated()
    start = time.perf_counter()
    if spec["phase"] == "train":
        model.train()
        output = model(**tensors)
        output["loss"].backward()
        check = float(output["loss"])
    else:
        model.eval()
        with torch.no_grad():
            output = model(**tensors)
        check = len(Tree.fromstring(output["trees"][0]).leaves())
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    peak_step = proc_status("VmHWM") if reset else maxrss()
    result = {
        "word_pieces": pieces,
        "seconds": seconds,
        "check": check,  # the loss, or the number of words of the predicted tree
        "params_mb": sum(p.numel() * p.element_size() for p in model.parameters()) / MB,
        "rss_after_load_mb": rss_loaded / MB,
        "peak_rss_getrusage_mb": maxrss() / MB,
        "peak_rss_getrusage_before_step_mb": maxrss_before / MB,
        "peak_rss_step_mb": peak_step / MB,
        "peak_rss_step_method": "VmHWM after clear_refs reset" if reset else "getrusage ru_maxrss",
        "step_increase_mb": (peak_step - rss_loaded) / MB,
    }
    if cuda:
        result.update({
            "cuda_allocated_before_mb": allocated_before / MB,
            "cuda_peak_allocated_mb": torch.cuda.max_memory_allocated() / MB,
            "cuda_step_increase_mb": (torch.cuda.max_memory_allocated() - allocated_before) / MB,
            "cuda_peak_reserved_mb": torch.cuda.max_memory_reserved() / MB,
            "cuda_device": torch.cuda.get_device_name(),
        })
    return result


def run_child(kind: str, spec: dict) -> dict:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", kind, json.dumps(spec)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=str(ROOT))
    if done.returncode != 0:
        raise SystemExit(f"{kind} subprocess failed ({done.returncode}) for {spec}:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------- main
def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True).stdout.strip()
    except OSError:
        return "?"


def table(rows, cuda: bool) -> str:
    header = ("| PLM | words | word pieces | phase | peak RSS, getrusage (MB) | RSS after load (MB) | "
              "step peak RSS (MB) | step peak − after load (MB) |")
    rule = "|---|---:|---:|---|---:|---:|---:|---:|"
    if cuda:
        header += " CUDA peak allocated (MB) | CUDA step increase (MB) |"
        rule += "---:|---:|"
    lines = [header + " seconds |", rule + "---:|"]
    for r in rows:
        line = (f"| {r['plm']} | {r['words']} | {r['word_pieces']} | {r['phase']} | "
                f"{r['peak_rss_getrusage_mb']:.0f} | {r['rss_after_load_mb']:.0f} | {r['peak_rss_step_mb']:.0f} | "
                f"{r['step_increase_mb']:.0f} |")
        if cuda:
            line += f" {r['cuda_peak_allocated_mb']:.0f} | {r['cuda_step_increase_mb']:.0f} |"
        lines.append(line + f" {r['seconds']:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--plm", default="tiny-bert", help="comma-separated: tiny-bert, minilm or model directories")
    parser.add_argument("--lengths", default="100,200,300", help="comma-separated sentence lengths in words")
    parser.add_argument("--phases", default=",".join(PHASES))
    parser.add_argument("--data", default=str(DEFAULT_DATA), help="PTB trees: vocabulary (span labels) and words")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "parser_memory.json"))
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, spec = args.child[0], json.loads(args.child[1])
        print(json.dumps((vocabulary_child if kind == "vocabulary" else measure_child)(spec)))
        return

    lengths = [int(n) for n in args.lengths.split(",")]
    phases = args.phases.split(",")
    rows, vocabularies = [], {}
    started = time.time()
    for plm in args.plm.split(","):
        with tempfile.TemporaryDirectory() as vocab_dir:
            base = {"plm": plm, "plm_path": plm_path(plm), "data": str(Path(args.data).resolve()),
                    "vocab_dir": vocab_dir, "device": args.device, "threads": args.threads}
            vocabularies[plm] = run_child("vocabulary", {**base, "max_words": max(lengths)})
            for words in lengths:
                for phase in phases:
                    result = run_child("measure", {**base, "words": words, "phase": phase})
                    rows.append({"plm": plm, "words": words, "phase": phase, **result})
                    print(f"{plm} {words} words {phase}: +{result['step_increase_mb']:.0f} MB", file=sys.stderr)

    labels = ", ".join(f"{plm}: {v['labels']} span labels" for plm, v in vocabularies.items())
    print(f"Parser memory: one sentence, {args.device}, {args.threads} thread(s), data {args.data} ({labels}).\n")
    print(table(rows, args.device == "cuda"))
    import torch  # only for the versions in the JSON, after the children ran

    result = {
        "command": " ".join([Path(sys.executable).name] + sys.argv),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "seconds": time.time() - started,
        "git_commit": git_commit(),
        "machine": {"python": platform.python_version(), "torch": torch.__version__, "cpu_count": os.cpu_count(),
                    "platform": platform.platform(), "load_average": os.getloadavg()},
        "config": str(CONFIG.relative_to(ROOT)),
        "settings": {**vars(args), "vocabularies": vocabularies},
        "method": ("one fresh subprocess per (PLM, words, phase); step_increase_mb = peak RSS during the step "
                   "(VmHWM after resetting it via /proc/self/clear_refs, else getrusage ru_maxrss) minus VmRSS "
                   "after loading the model and making the batch; peak_rss_getrusage_mb = ru_maxrss of the whole "
                   "process; on CUDA also torch.cuda.max_memory_allocated minus memory_allocated before the step"),
        "rows": rows,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
