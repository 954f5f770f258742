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

Prints a markdown table and writes ``runs/benchmarks/parser_memory.json`` (or ``--out``).
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

import common

ROOT = common.ROOT
CONFIG = ROOT / "training_configs" / "parse_hash.jsonnet"
DEFAULT_DATA = ROOT / "fixtures" / "data" / "ptb" / "craft_train.tree"
PHASES = ("train", "cky")
MB = common.MB


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


def build_case(spec: dict):
    """The parser from the config on the saved vocabulary, and the tensors of one sentence of `spec["words"]`
    words (under the synthetic gold tree for training)."""
    import torch
    from allennlp.common import Params
    from allennlp.data import Batch, DatasetReader, Vocabulary
    from allennlp.models import Model
    from allennlp.nn import util
    from nltk import Tree

    import bitcode_allennlp.plugin  # noqa: F401

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
    return model, util.move_to_device(batch.as_tensor_dict(), torch.device(spec["device"]))


def run_phase(model, tensors, phase: str):
    """One training forward + backward, or one inference forward under no_grad; the loss or the parsed words."""
    import torch
    from nltk import Tree

    if phase == "train":
        model.train()
        output = model(**tensors)
        output["loss"].backward()
        return float(output["loss"])
    model.eval()
    with torch.no_grad():
        output = model(**tensors)
    return len(Tree.fromstring(output["trees"][0]).leaves())


def measure_child(spec: dict) -> dict:
    """One phase on one sentence, in this fresh process."""
    setup_environment(spec)
    import torch

    torch.set_num_threads(spec["threads"])
    torch.manual_seed(0)
    cuda = spec["device"] == "cuda"
    model, tensors = build_case(spec)
    pieces = int(tensors["tokens"]["tokens"]["token_ids"].shape[1])

    rss_loaded = common.proc_status_mb("VmRSS")
    maxrss_before = common.ru_maxrss_mb()
    reset = common.reset_peak_rss()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        allocated_before = torch.cuda.memory_allocated()
    start = time.perf_counter()
    check = run_phase(model, tensors, spec["phase"])
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    peak_step = common.proc_status_mb("VmHWM") if reset else common.ru_maxrss_mb()
    result = {
        "word_pieces": pieces,
        "seconds": seconds,
        "check": check,  # the loss, or the number of words of the predicted tree
        "params_mb": sum(p.numel() * p.element_size() for p in model.parameters()) / MB,
        "rss_after_load_mb": rss_loaded,
        "peak_rss_getrusage_mb": common.ru_maxrss_mb(),
        "peak_rss_getrusage_before_step_mb": maxrss_before,
        "peak_rss_step_mb": peak_step,
        "peak_rss_step_method": "VmHWM after clear_refs reset" if reset else "getrusage ru_maxrss",
        "step_increase_mb": None if peak_step is None or rss_loaded is None else peak_step - rss_loaded,
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
def table(rows, cuda: bool) -> str:
    header = ["PLM", "words", "word pieces", "phase", "peak RSS, getrusage (MB)", "RSS after load (MB)",
              "step peak RSS (MB)", "step peak − after load (MB)"]
    if cuda:
        header += ["CUDA peak allocated (MB)", "CUDA step increase (MB)"]
    lines = []
    for r in rows:
        line = [r["plm"], r["words"], r["word_pieces"], r["phase"], f"{r['peak_rss_getrusage_mb']:.0f}",
                f"{r['rss_after_load_mb']:.0f}", f"{r['peak_rss_step_mb']:.0f}", f"{r['step_increase_mb']:.0f}"]
        if cuda:
            line += [f"{r['cuda_peak_allocated_mb']:.0f}", f"{r['cuda_step_increase_mb']:.0f}"]
        lines.append(line + [f"{r['seconds']:.2f}"])
    return common.markdown_table(header + ["seconds"], lines, "lrrl" + "r" * (len(header) - 3))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--plm", default="tiny-bert", help="comma-separated: tiny-bert, minilm or model directories")
    parser.add_argument("--lengths", default="100,200,300", help="comma-separated sentence lengths in words")
    parser.add_argument("--phases", default=",".join(PHASES))
    parser.add_argument("--data", default=str(DEFAULT_DATA), help="PTB trees: vocabulary (span labels) and words")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default=str(common.RESULTS / "parser_memory.json"))
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    return common.parse_args(parser)


def measure_all(args: argparse.Namespace, lengths: List[int]):
    """Every (PLM, length, phase) in its own subprocess; the rows and each PLM's vocabulary sizes."""
    rows: List[Dict[str, Any]] = []
    vocabularies: Dict[str, dict] = {}
    for plm in args.plm.split(","):
        with tempfile.TemporaryDirectory() as vocab_dir:
            base = {"plm": plm, "plm_path": common.plm_path(plm), "data": str(Path(args.data).resolve()),
                    "vocab_dir": vocab_dir, "device": args.device, "threads": args.threads}
            vocabularies[plm] = run_child("vocabulary", {**base, "max_words": max(lengths)})
            for words in lengths:
                for phase in args.phases.split(","):
                    result = run_child("measure", {**base, "words": words, "phase": phase})
                    rows.append({"plm": plm, "words": words, "phase": phase, **result})
                    print(f"{plm} {words} words {phase}: +{result['step_increase_mb']:.0f} MB", file=sys.stderr)
    return rows, vocabularies


def main() -> None:
    args = parse_args()
    if args.child:
        kind, spec = args.child[0], json.loads(args.child[1])
        print(json.dumps((vocabulary_child if kind == "vocabulary" else measure_child)(spec)))
        return
    started = time.time()
    rows, vocabularies = measure_all(args, [int(n) for n in args.lengths.split(",")])
    labels = ", ".join(f"{plm}: {v['labels']} span labels" for plm, v in vocabularies.items())
    print(f"Parser memory: one sentence, {args.device}, {args.threads} thread(s), data {args.data} ({labels}).\n")
    print(table(rows, args.device == "cuda"))
    common.write_json(args.out, {
        "command": " ".join([Path(sys.executable).name] + sys.argv),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "seconds": time.time() - started,
        "machine": common.machine(torch_info=True),  # imports torch, after the children ran
        "config": str(CONFIG.relative_to(ROOT)),
        "settings": {**vars(args), "vocabularies": vocabularies},
        "method": ("one fresh subprocess per (PLM, words, phase); step_increase_mb = peak RSS during the step "
                   "(VmHWM after resetting it via /proc/self/clear_refs, else getrusage ru_maxrss) minus VmRSS "
                   "after loading the model and making the batch; peak_rss_getrusage_mb = ru_maxrss of the whole "
                   "process; on CUDA also torch.cuda.max_memory_allocated minus memory_allocated before the step"),
        "rows": rows,
    })
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
