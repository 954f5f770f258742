"""Controls for "do the codes carry the task?" (issue: codes that carry the task), two of them:

    python benchmarks/controls.py random-codes --task pos --reader conllu_pos \
        --train ../shared/data/pos/ud_english_ewt/en_ewt-ud-train.conllu \
        --dev ../shared/data/pos/ud_english_ewt/en_ewt-ud-dev.conllu --out runs/controls/random_pos
    python benchmarks/controls.py layers runs/exp/hashing/model.tar.gz --train TRAIN --dev DEV --out OUT.json

`random-codes`: one random K-bit code per word *type* (the low K bits of blake2b(word)), written as codes corpora of
the train and dev files, then the validation stage (`{pos,ner}_code.jsonnet`, `allennlp train`) on them. Such
codes say which word it is and nothing about its context, so the validation model should reach about the
word-majority baseline (each dev word tagged with its most frequent train tag): that proves the validation reader
and model learn from codes. Far below it would mean the validation stage itself loses information.

`layers`: where a hashing model loses the task. For the train and dev words it collects x (the PLM's word vectors,
sub-tokens averaged), h (the hash layer's output, what the task head reads), s (the ego-attention scores, K reals)
and sign(s) (the code), and trains the same window-3 MLP probe (`bits.probe.train_probe`: previous, word, next;
512 hidden units) on each, scored on dev. x → h is what the hash layer keeps for the task head, s → sign(s) what
the binarisation drops.

Both print a table and write JSON (`--out`); the commands that ran are in the JSON.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import numpy as np

import common

ROOT = common.ROOT


def word_code(word: str, num_bits: int) -> int:
    """A fixed pseudo-random K-bit code of a word string (the same in every process)."""
    digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") & ((1 << num_bits) - 1)


def read_corpus(reader_name: str, path: str) -> List[Dict[str, Any]]:
    """Sentences of a corpus as `{"words", "tags", "source"}`, read by one of our readers (token_policy repair)."""
    from allennlp.common import Params
    from allennlp.data import DatasetReader

    import bitcode_allennlp.plugin  # noqa: F401

    reader = DatasetReader.from_params(Params({"type": reader_name, "token_policy": "repair"}))
    sentences = []
    for instance in reader.read(path):
        metadata = instance["metadata"].metadata  # type: ignore[attr-defined]
        sentences.append({"words": metadata["words"], "tags": list(instance["tags"].labels),  # type: ignore
                          "source": metadata.get("source")})
    return sentences


def write_random_codes(sentences: List[Dict[str, Any]], path: Path, num_bits: int) -> None:
    from bitcode_allennlp.common.code_value import Codes

    with open(path, "w", encoding="utf-8") as out:
        for sentence in sentences:
            codes = Codes([word_code(word, num_bits) for word in sentence["words"]], num_bits).hex
            out.write(json.dumps({"words": sentence["words"], "codes": codes, "num_bits": num_bits,
                                  "tags": sentence["tags"], "source": sentence["source"]}, ensure_ascii=False) + "\n")


def random_codes(args: argparse.Namespace) -> Dict[str, Any]:
    from bitcode_allennlp.bits.corpus import read_codes_corpus
    from bitcode_allennlp.bits.probe import probe_codes

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for split, path in (("train", args.train), ("dev", args.dev)):
        write_random_codes(read_corpus(args.reader, path), out / f"{split}.jsonl", args.bits)
    probe = probe_codes(read_codes_corpus(str(out / "train.jsonl")), read_codes_corpus(str(out / "dev.jsonl")))
    env = {"TRAIN_DATA": str(out / "train.jsonl"), "DEV_DATA": str(out / "dev.jsonl"), "K": str(args.bits),
           **dict(item.split("=", 1) for item in args.code_set)}
    run = out / "validation"
    command = ["allennlp", "train", str(ROOT / "training_configs" / f"{args.task}_code.jsonnet"), "-s", str(run),
               "--force"]
    start = time.perf_counter()
    subprocess.run(command, env={**os.environ, **env}, check=True, stdout=subprocess.DEVNULL,
                   stderr=open(out / "validation.log", "w"))
    metrics = json.loads((run / "metrics.json").read_text())
    result = {
        "control": "random code per word type", "task": args.task, "bits": args.bits,
        "command": " ".join(f"{k}={v}" for k, v in env.items()) + " " + " ".join(command),
        "validation_accuracy": metrics.get("best_validation_accuracy"),
        "validation_f1": metrics.get("best_validation_f1-measure-overall"),
        "validation_training_accuracy": metrics.get("training_accuracy"),
        "word_majority": probe["accuracy"]["word_majority"], "code_majority": probe["accuracy"]["code_majority"],
        "mlp_window3": probe["accuracy"]["mlp_window3"], "seconds": round(time.perf_counter() - start, 1),
    }
    print(f"\nrandom code per word type ({args.task}, K = {args.bits}), dev accuracy:")
    for key in ("word_majority", "code_majority", "mlp_window3", "validation_accuracy"):
        print(f"  {key:22s} {100 * result[key]:6.2f}")
    return result


def collect(model, reader, path: str, max_sentences: int = None):
    """x, h, s of every word of `path` (eval mode), and the sentence id of each word, its tag id."""
    import torch
    from allennlp.data import Batch
    from allennlp.nn import util

    from bitcode_allennlp.code_stage.hash_corpus import padded_batches

    from allennlp.data import Instance

    instances, words_only = [], []
    for instance in reader.read(path):
        reader.apply_token_indexers(instance)
        words = Instance({"tokens": instance["tokens"]})  # the words only: a tag unseen in training is no error
        words.index_fields(model.vocab)
        instances.append(instance)
        words_only.append(words)
        if max_sentences and len(instances) == max_sentences:
            break
    order = padded_batches(words_only, 1024, 1536)
    feats: Dict[str, List[Any]] = {"x": [None] * len(instances), "h": [None] * len(instances),
                                   "s": [None] * len(instances)}
    with torch.no_grad():
        for group in order:
            batch = Batch([words_only[i] for i in group]).as_tensor_dict()
            mask = util.get_text_field_mask(batch["tokens"])  # (batch, words)
            x = model.text_field_embedder(batch["tokens"])  # (batch, words, d)
            h, s = model.encoder.forward_with_scores(x, mask)  # (batch, words, d), (batch, words, K)
            for row, index in enumerate(group):
                n = int(mask[row].sum())
                for name, value in (("x", x), ("h", h), ("s", s)):
                    feats[name][index] = value[row, :n].numpy()  # (words, dim)
    index = model.vocab.get_token_to_index_vocabulary("labels")
    tags = [index.get(t, -1) for inst in instances for t in inst["tags"].labels]  # -1: a tag the model never saw
    sentence_ids = np.concatenate([np.full(len(inst["tokens"]), i) for i, inst in enumerate(instances)])
    return {name: np.concatenate(values) for name, values in feats.items()}, np.array(tags), sentence_ids


def layers(args: argparse.Namespace) -> Dict[str, Any]:
    from allennlp.models.archival import load_archive

    import bitcode_allennlp.plugin  # noqa: F401  (our readers and models, by name)
    from bitcode_allennlp.bits.probe import train_probe, window_rows

    archive = load_archive(args.archive)
    model = archive.model.eval()
    reader = archive.validation_dataset_reader
    train, train_tags, train_ids = collect(model, reader, args.train, args.max_train_sentences)
    dev, dev_tags, dev_ids = collect(model, reader, args.dev)
    train["sign(s)"], dev["sign(s)"] = np.where(train["s"] > 0, 1.0, -1.0), np.where(dev["s"] > 0, 1.0, -1.0)
    num_labels = model.vocab.get_vocab_size("labels")
    result: Dict[str, Any] = {"archive": args.archive, "train": args.train, "dev": args.dev,
                              "train_words": int(len(train_tags)), "dev_words": int(len(dev_tags)), "window3_mlp": {}}
    for name in ("x", "h", "s", "sign(s)"):
        scale = train[name].std() or 1.0  # standardised inputs: x and h are LayerNorm-sized, s is not
        x_train = window_rows(train[name] / scale, train_ids).astype(np.float32)  # (n, 3d)
        x_dev = window_rows(dev[name] / scale, dev_ids).astype(np.float32)  # (m, 3d)
        known = train_tags >= 0  # (n,)
        predictions, _ = train_probe(x_train[known], train_tags[known], x_dev, num_labels, hidden=512, seed=0,
                                     epochs=args.epochs,
                                     min_steps=300, batch_size=1024, lr=2e-3, threads=None)
        result["window3_mlp"][name] = float((predictions == dev_tags).mean())
        print(f"  window-3 MLP on {name:8s} {100 * result['window3_mlp'][name]:6.2f}", flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="control", required=True)
    rc = sub.add_parser("random-codes", help="validation stage on one random code per word type")
    rc.add_argument("--task", choices=["pos", "ner"], default="pos")
    rc.add_argument("--reader", default="conllu_pos", help="our reader of the corpus (default conllu_pos)")
    rc.add_argument("--train", required=True)
    rc.add_argument("--dev", required=True)
    rc.add_argument("--bits", type=int, default=24)
    rc.add_argument("--code-set", nargs="*", default=[], metavar="VAR=VALUE", help="validation-stage variables")
    rc.add_argument("--out", required=True, help="folder for the codes corpora, the run and result.json")
    ly = sub.add_parser("layers", help="window-3 probes on x, h, s, sign(s) of one hashing model")
    ly.add_argument("archive")
    ly.add_argument("--train", required=True)
    ly.add_argument("--dev", required=True)
    ly.add_argument("--max-train-sentences", type=int, default=None)
    ly.add_argument("--epochs", type=int, default=8)
    ly.add_argument("--out", required=True, help="result JSON")
    args = common.parse_args(parser)
    result = random_codes(args) if args.control == "random-codes" else layers(args)
    result["argv"] = sys.argv
    out = Path(args.out) / "result.json" if args.control == "random-codes" else Path(args.out)
    common.write_json(out, result)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
