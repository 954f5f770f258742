"""One full training epoch on each shared corpus: peak memory and words/s of the hashing stage (fine-tuned MiniLM,
two dropout views, Table 6's β) beside allennlp-models' `crf_tagger` on the same PLM and the same data.

    python benchmarks/train_memory.py                        # POS (UD EWT), NER (BTC), parsing (CRAFT, 6,000 trees)
    python benchmarks/train_memory.py --tasks pos --set MAX_SUBTOKENS=4096   # one task, a config variable changed
    python benchmarks/train_memory.py --tasks pos --cuda-device 0            # on a GPU (both runs)

Each run is `allennlp train` in a fresh process, one at a time; its peak resident memory comes from the kernel
(`os.wait4`, the child's `ru_maxrss`), its training words/s from the `throughput` callback (training steps only:
no validation pass, no checkpointing; both runs also validate once on the whole dev file, which counts towards
the peak). The anchor is what an AllenNLP user would train on the same PLM: `crf_tagger` with the
`pretrained_transformer_mismatched` embedder (fine-tuned), one view, `bucket` batches of 32 sentences,
`huggingface_adamw` at lr 5e-5. For parsing the anchor tags the same CRAFT trees' part of speech (`ptb_hash`).
Results: `runs/benchmarks/train_memory.json` (rewritten after every run; finished runs are kept and not
rerun unless `--force`) and a markdown table on stdout.
"""
import argparse
import datetime
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import common

ROOT = common.ROOT
DATA = common.SHARED_DATA
RESULTS = common.RESULTS / "train_memory.json"

# task: our config, its variables, the anchor's reader and label scheme, the train/dev files.
TASKS: Dict[str, Dict[str, Any]] = {
    "pos": {"corpus": "UD EWT (XPOS)", "config": "pos_hash.jsonnet", "env": {"READER": "conllu_pos"},
            "reader": {"type": "conllu_pos"}, "label_encoding": None, "metric": "accuracy",
            "train": DATA / "pos/ud_english_ewt/en_ewt-ud-train.conllu",
            "dev": DATA / "pos/ud_english_ewt/en_ewt-ud-dev.conllu"},
    "ner": {"corpus": "BTC (CoNLL-2012 layout)", "config": "ner_hash.jsonnet", "env": {},
            "reader": {"type": "ontonotes_hash", "coding_scheme": "BIOUL"}, "label_encoding": "BIOUL",
            "metric": "f1-measure-overall",
            "train": DATA / "ner/btc/conll2012/train", "dev": DATA / "ner/btc/conll2012/development"},
    "parse": {"corpus": "CRAFT trees", "config": "parse_hash.jsonnet", "env": {},
              "reader": {"type": "ptb_hash"}, "label_encoding": None, "metric": "evalb_f1",
              "anchor_metric": "accuracy",
              "train": DATA / "const/craft/craft-train.tree", "dev": DATA / "const/craft/craft-dev.tree"},
}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default="pos,ner,parse", help="comma-separated: pos, ner, parse")
    parser.add_argument("--runs", default="ours,anchor",
                        help="comma-separated: ours (two sequential views), ours_batched, ours_hash_layer (VIEWS), "
                             "ours_hash_layer_qk (and QK_ONLY=true), anchor")
    parser.add_argument("--parse-trees", type=int, default=6000, help="CRAFT train trees (default 6,000)")
    parser.add_argument("--max-instances", type=int, default=None, help="cap train sentences of every task (smoke)")
    parser.add_argument("--dev-max-instances", type=int, default=None, help="cap dev sentences (smoke)")
    parser.add_argument("--anchor-batch-size", type=int, default=32, help="sentences per anchor batch (default 32)")
    parser.add_argument("--set", nargs="*", default=[], metavar="VAR=VALUE", help="config variables for our runs")
    parser.add_argument("--cuda-device", type=int, default=-1, help="GPU index for every run (default -1: CPU)")
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"results JSON (default {RESULTS})")
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "train_memory", help="serialization dirs")
    parser.add_argument("--force", action="store_true", help="rerun runs already in the results file")
    return common.parse_args(parser)


def anchor_config(task: Dict[str, Any], plm: str, max_instances, dev_max_instances, batch_size: int,
                  cuda_device: int = -1) -> Dict:
    reader = {**task["reader"], "token_policy": "repair",
              "token_indexers": {"tokens": {"type": "pretrained_transformer_mismatched", "model_name": plm,
                                            "max_length": 512}}}
    model = {"type": "crf_tagger",
             "text_field_embedder": {"token_embedders": {"tokens": {
                 "type": "pretrained_transformer_mismatched", "model_name": plm, "max_length": 512,
                 "train_parameters": True}}},
             "encoder": {"type": "pass_through", "input_dim": 384}, "dropout": 0.1,
             "include_start_end_transitions": False}
    if task["label_encoding"]:
        model.update(label_encoding=task["label_encoding"], constrain_crf_decoding=True, calculate_span_f1=True)
    return {
        "dataset_reader": {**reader, **({"max_instances": max_instances} if max_instances else {})},
        "validation_dataset_reader": {**reader, **({"max_instances": dev_max_instances} if dev_max_instances else {})},
        "train_data_path": str(task["train"]), "validation_data_path": str(task["dev"]),
        "model": model,
        "data_loader": {"batch_sampler": {"type": "bucket", "batch_size": batch_size}},
        "validation_data_loader": {"batch_sampler": {"type": "bucket", "batch_size": batch_size}},
        "trainer": {"optimizer": {"type": "huggingface_adamw", "lr": 5e-5, "weight_decay": 0.01},
                    "num_epochs": 1, "grad_norm": 1.0, "cuda_device": cuda_device,
                    "callbacks": [{"type": "parameter_count"}, {"type": "throughput"}]},
        "random_seed": 13370, "numpy_seed": 1337, "pytorch_seed": 133,
    }


def run_train(config: str, serialization_dir: Path, env: Dict[str, str], log: Path) -> Dict[str, Any]:
    """`allennlp train` in a fresh process; its peak RSS (kernel's ru_maxrss), wall time and final metrics."""
    if serialization_dir.exists():
        subprocess.run(["rm", "-rf", str(serialization_dir)], check=True)
    command = ["allennlp", "train", config, "-s", str(serialization_dir), "--include-package", "bitcode_allennlp"]
    start = time.perf_counter()
    with open(log, "w") as out:
        process = subprocess.Popen(command, env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT)
        code, peak_rss_mb = common.wait_peak_rss_mb(process)
    wall = time.perf_counter() - start
    if code != 0:
        raise SystemExit(f"{' '.join(command)} failed with exit code {code}; see {log}")
    metrics = json.loads((serialization_dir / "metrics.json").read_text())
    return {"command": " ".join(f"{k}={v}" for k, v in env.items()) + " " + " ".join(command),
            "peak_rss_mb": round(peak_rss_mb, 1), "wall_seconds": round(wall, 1), "metrics": metrics}


def words_per_second(row: Dict[str, Any]) -> float:
    return row["metrics"]["training_words_per_second"]


def table(results: Dict[str, Any]) -> str:
    rows = []
    for key, row in results["runs"].items():
        task, run = key.split(":")
        m = row["metrics"]
        metric = TASKS[task].get("anchor_metric", TASKS[task]["metric"]) if run == "anchor" else TASKS[task]["metric"]
        score = m.get(f"best_validation_{metric}", m.get(f"validation_{metric}"))
        rows.append([task, f"{TASKS[task]['corpus']}, {row['train_sentences']:,}", row["label"],
                     f"{row['peak_rss_mb']:,.0f}", f"{m.get('training_words_per_second', 0):,.0f}",
                     f"{m.get('training_seconds', 0):,.0f}", "" if score is None else f"{100 * score:.2f} ({metric})"])
    lines = [common.markdown_table(["task", "corpus, train sentences", "run", "peak RSS (MB)", "training words/s",
                                    "training s", "dev score"], rows, "lllrrrr")]
    for task in TASKS:
        anchor = results["runs"].get(f"{task}:anchor")
        for run in ("ours", "ours_batched", "ours_hash_layer", "ours_hash_layer_qk"):
            ours = results["runs"].get(f"{task}:{run}")
            if ours and anchor:
                lines.append(f"\n{task}: {run} / anchor peak RSS {ours['peak_rss_mb'] / anchor['peak_rss_mb']:.2f}×, "
                             f"words/s {words_per_second(ours) / words_per_second(anchor):.2f}×")
    return "\n".join(lines)


def run_setup(args: argparse.Namespace, name: str, run: str, plm: str,
              cap: Optional[int]) -> Tuple[str, Dict[str, str], str]:
    """The config file, environment and label of one run: ours (our config, its variables) or the anchor (a
    temporary JSON config)."""
    task = TASKS[name]
    if run.startswith("ours"):
        qk_only = run.endswith("_qk")  # the later paper's hash layer: query and key projections only
        views = run[len("ours_"):].removesuffix("_qk") if run != "ours" else "sequential"
        env = {"VIEWS": views, **({"QK_ONLY": "true"} if qk_only else {}), "PLM": plm,
               "TRAIN_DATA": str(task["train"]), "DEV_DATA": str(task["dev"]), "TOKEN_POLICY": "repair", "EPOCHS": "1",
               **task["env"], **dict(item.split("=", 1) for item in args.set)}
        if cap:
            env["MAX_INSTANCES"] = str(cap)
        if args.dev_max_instances:
            env["DEV_MAX_INSTANCES"] = str(args.dev_max_instances)
        if args.cuda_device >= 0:
            env["CUDA_DEVICE"] = str(args.cuda_device)
        label = f"hashing stage (2 views {views}{', Q/K only' if qk_only else ''}, fine-tuned)"
        return str(ROOT / "training_configs" / task["config"]), env, label
    handle, config = tempfile.mkstemp(suffix=".json", prefix=f"anchor_{name}_")
    with os.fdopen(handle, "w") as file:
        json.dump(anchor_config(task, plm, cap, args.dev_max_instances, args.anchor_batch_size, args.cuda_device), file)
    return config, {}, f"crf_tagger anchor (1 view, {args.anchor_batch_size} sentences)"


def main() -> None:
    args = parse_args()
    plm = common.plm_path("minilm")
    args.work.mkdir(parents=True, exist_ok=True)
    results = json.loads(args.out.read_text()) if args.out.exists() else {"runs": {}}
    gpu = args.cuda_device if args.cuda_device >= 0 else None
    results["machine"] = common.machine(torch_info=True, cuda_device=gpu, date=datetime.date.today().isoformat())
    for name in args.tasks.split(","):
        cap = args.parse_trees if name == "parse" else args.max_instances
        if name == "parse" and args.max_instances:
            cap = min(cap, args.max_instances)
        for run in args.runs.split(","):
            key = f"{name}:{run}"
            if key in results["runs"] and not args.force:
                print(f"{key}: kept from {args.out}")
                continue
            config, env, label = run_setup(args, name, run, plm, cap)
            print(f"{key}: training ...", flush=True)
            row = run_train(config, args.work / key.replace(":", "_"), env, args.work / f"{key.replace(':', '_')}.log")
            row.update(label=label, train_sentences=row["metrics"].get("training_sentences", 0))
            if run == "anchor":
                row["config"] = json.loads(Path(config).read_text())
                os.unlink(config)
            results["runs"][key] = row
            common.write_json(args.out, results)
            print(f"{key}: peak RSS {row['peak_rss_mb']:,.0f} MB, "
                  f"{row['metrics'].get('training_words_per_second', 0):,.0f} words/s", flush=True)
    print(table(results))


if __name__ == "__main__":
    main()
