"""Inference speed and size of the validation-stage model against the hashing-stage model (issue: validation stage).

Both models label the same sentences of an experiment's dev codes file in the same token-budget batches: the
hashing model from the words (PLM, hash layer, CRF/CKY), the lightweight model from the codes (Eq. 9 embedding,
one transformer layer, the same head). Reports words/s of each, their ratio (target ≥ 20× on CPU) and the parameter
ratio (target ≤ 1% with MiniLM); prints a markdown table and writes JSON.

    python benchmarks/validation_speed.py runs/validation/ner_beta0.005      # an experiment folder
Options: --sentences (default 500), --rounds (5; the median is kept), --max-tokens (1024), --threads (torch).
"""
import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import torch
from allennlp.models.archival import load_archive

import bitcode_allennlp.plugin  # noqa: F401
from bitcode_allennlp.training.callbacks import count_parameters
from bitcode_allennlp.validation.hash_corpus import padded_batches

ROOT = Path(__file__).resolve().parents[1]


def words_per_second(model, batches, rounds):
    model.eval()
    words = sum(len(instance["tokens"]) for batch in batches for instance in batch)
    with torch.no_grad():
        for batch in batches[:2]:
            model.forward_on_instances(batch)  # warm-up
        times = []
        for _ in range(rounds):
            start = time.perf_counter()
            for batch in batches:
                model.forward_on_instances(batch)
            times.append(time.perf_counter() - start)
    return words / statistics.median(times), statistics.median(times), words


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("experiment", type=Path, help="an experiment folder (bitcode_allennlp.validation.experiment)")
    parser.add_argument("--sentences", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "validation_speed.json")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    row = json.loads((args.experiment / "experiment.json").read_text())
    hashing = load_archive(row["hashing_archive"])
    light = load_archive(row["validation_archive"])
    codes = [json.loads(line) for line in (args.experiment / "codes" / "dev.jsonl").read_text().splitlines()]
    codes = codes[: args.sentences]
    word_instances = [hashing.validation_dataset_reader.text_to_instance(line["words"]) for line in codes]
    code_instances = [light.validation_dataset_reader.text_to_instance(line["codes"], words=line["words"])
                      for line in codes]
    for instance in word_instances:
        hashing.validation_dataset_reader.apply_token_indexers(instance)
    for instance in code_instances:
        light.validation_dataset_reader.apply_token_indexers(instance)
    groups = padded_batches(code_instances, args.max_tokens)
    results = {}
    for name, archive, instances in (("hashing", hashing, word_instances), ("validation", light, code_instances)):
        batches = [[instances[i] for i in group] for group in groups]
        speed, seconds, words = words_per_second(archive.model, batches, args.rounds)
        results[name] = {"words_per_s": speed, "seconds": seconds, "words": words,
                         "parameters": count_parameters(archive.model)["parameters"]}
    speedup = results["validation"]["words_per_s"] / results["hashing"]["words_per_s"]
    size = results["validation"]["parameters"] / results["hashing"]["parameters"]
    print(f"\n{len(codes)} dev sentences of {args.experiment}, {len(groups)} batches of ≤ {args.max_tokens} words, "
          f"median of {args.rounds} rounds, {torch.get_num_threads()} torch threads\n")
    print("| model | input | parameters | words/s | time (s) |\n|---|---|---|---|---|")
    for name, source in (("hashing", "words → PLM"), ("validation", "codes")):
        r = results[name]
        print(f"| {name} stage | {source} | {r['parameters']:,} | {r['words_per_s']:,.0f} | {r['seconds']:.3f} |")
    print(f"\nspeed-up {speedup:.1f}× (target ≥ 20×); parameters {100 * size:.2f}% of the hashing model (target ≤ 1%)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "experiment": str(args.experiment), "task": row["task"], "sentences": len(codes), "rounds": args.rounds,
        "max_tokens": args.max_tokens, "threads": torch.get_num_threads(), "speedup": speedup,
        "parameter_ratio": size, "results": results,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "torch": torch.__version__}},
        indent=2))


if __name__ == "__main__":
    main()
