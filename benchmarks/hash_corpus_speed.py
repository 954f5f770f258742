"""Words per second of `allennlp hash-corpus` against `allennlp predict` of the same archive on the same sentences,
and the bytes per word of the codes corpus (issue 17: re-annotation at scale).

    python benchmarks/hash_corpus_speed.py                   # trains a fixture NER archive first (~35 s): a smoke run
    python benchmarks/hash_corpus_speed.py --archive runs/ner-btc/model.tar.gz \
        --data ../shared/data/ner/btc/conll2012/development --sentences 1000 --name ner-btc-minilm

**Fair comparison: both in one process**, on one loaded archive (loading is timed once, apart: `load_s`), so neither
pays the interpreter and archive start-up that a fresh `allennlp` command pays once per run (the same for both,
and negligible on a large corpus). Each path is what its command runs between loading and exiting:

* `hash-corpus`: `reannotate` (the command's function) on the first `--sentences` sentences of `--data` read by
  the archive's validation reader (`--max-instances`), in its token-budget batches (`--batch-size` words,
  `--max-subtokens`; the command's defaults 1024 / 1536): input fingerprint, reading, indexing, the PLM and the
  hash layer only (`HashingModel.predict_codes`: no task head, no CRF / CKY), one JSON line per sentence written.
* `predict`: AllenNLP's `_PredictManager` (what `allennlp predict ARCHIVE IN --output-file OUT --batch-size B`
  runs, with this package's input checks) on a JSON-lines file of the same sentences' words (`{"tokens": [...]}`,
  written before timing), with the archive's default predictor: the full model (PLM, hash layer, task head and
  Viterbi / CKY decoding), one JSON line of words, tags, codes and bits per sentence. `--predict-batch-sizes`
  (sentences per batch; `allennlp predict`'s default is 1) are each timed; the best is the reference.

Rounds alternate the order of the paths; medians of wall and process CPU time are kept. The codes of both paths
are compared word by word (`codes_differ`: words whose code differs; expected 0). Storage: bytes per word of the
codes corpus as written (JSON lines with words, codes, gold annotation and source), of that file gzipped, of the
`"codes"` field alone, of the hex digits alone, packed bits (K/8), and of the predict output. Prints a markdown
table; writes `runs/benchmarks/hash_corpus_speed.json` (one entry per `--name`, default `fixture` or the
archive's directory name).
"""
import argparse
import gzip
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import common

OUT = common.RESULTS / "hash_corpus_speed.json"
STORAGE_LABELS = {"codes_jsonl": "hash-corpus output (JSON lines: words, codes, gold, source)",
                  "codes_jsonl_gzip": "the same, gzip -6", "codes_field": "its `codes` field alone (JSON)",
                  "hex_digits": "hex digits alone", "packed_bits": "packed bits (K / 8, K = {num_bits})",
                  "predict_jsonl": "`allennlp predict` output (words, tags, codes, bits)"}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--archive", help="default: train training_configs/ner_hash.jsonnet on the fixtures")
    parser.add_argument("--data", help="the corpus, in the archive reader's format (default: its training's dev data)")
    parser.add_argument("--sentences", type=int, default=1000, help="the first N sentences of --data (default 1000)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=1024, help="hash-corpus --batch-size (words, default 1024)")
    parser.add_argument("--max-subtokens", type=int, default=1536, help="hash-corpus --max-subtokens (default 1536)")
    parser.add_argument("--predict-batch-sizes", default="1,8,32",
                        help="allennlp predict --batch-size values to time (sentences; default 1,8,32)")
    parser.add_argument("--cuda-device", type=int, default=-1)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--name", help="key of this run in the JSON")
    parser.add_argument("--out", default=str(OUT))
    args = common.parse_args(parser)
    args.predict_batch_sizes = [int(size) for size in args.predict_batch_sizes.split(",")]
    return args


def command_paths(args: argparse.Namespace, archive, archive_path: str, sha256: str, data: str,
                  sentences: List[List[str]], work: Path) -> Dict[str, Callable[[], None]]:
    """What `hash-corpus` and `predict` (at each batch size) run between loading and exiting, writing into `work`."""
    from allennlp.commands.predict import _PredictManager
    from allennlp.predictors import Predictor

    from bitcode_allennlp.code_stage.hash_corpus import reannotate

    predict_input = work / "input.jsonl"
    predict_input.write_text("".join(json.dumps({"tokens": s}, ensure_ascii=False) + "\n" for s in sentences),
                             encoding="utf-8")
    predictor = Predictor.from_archive(archive)

    def run_hash_corpus():
        reannotate(archive.model, archive.validation_dataset_reader, data, str(work / "codes.jsonl"),
                   max_tokens=args.batch_size, max_subtokens=args.max_subtokens, cuda_device=args.cuda_device,
                   force=True, progress=False, archive_path=archive_path, archive_sha256=sha256)

    def run_predict(batch_size):
        def run():
            _PredictManager(predictor, str(predict_input), str(work / f"predict_{batch_size}.jsonl"), batch_size,
                            print_to_console=False, has_dataset_reader=False).run()
        return run

    return {"hash-corpus": run_hash_corpus,
            **{f"predict (batch {b})": run_predict(b) for b in args.predict_batch_sizes}}


def compare_outputs(work: Path, sentences: List[List[str]], num_bits: int,
                    predict_batch_size: int) -> Tuple[int, Dict[str, float]]:
    """Words whose code differs between the two paths' outputs, and bytes per word of each way to store codes."""
    words = sum(map(len, sentences))
    codes_file, predict_file = work / "codes.jsonl", work / f"predict_{predict_batch_size}.jsonl"
    lines = [json.loads(line) for line in codes_file.read_text(encoding="utf-8").splitlines()]
    predicted = [json.loads(line) for line in predict_file.read_text(encoding="utf-8").splitlines()]
    assert [line["words"] for line in lines] == sentences == [row["words"] for row in predicted]
    differ = sum(a != b for line, row in zip(lines, predicted) for a, b in zip(line["codes"], row["codes"]))
    raw = codes_file.read_bytes()
    storage = {
        "codes_jsonl": len(raw) / words,
        "codes_jsonl_gzip": len(gzip.compress(raw, 6)) / words,
        "codes_field": sum(len(json.dumps(line["codes"])) for line in lines) / words,
        "hex_digits": -(-num_bits // 4),
        "packed_bits": num_bits / 8,
        "predict_jsonl": predict_file.stat().st_size / words,
    }
    return differ, storage


def report(result: Dict[str, Any], archive_path: str, name: str) -> str:
    r = result
    rows = [[f"`{key}`", "PLM + hash layer only, token-budget batches" if key == "hash-corpus"
             else "PLM + hash layer + task head and decoding", f"{median:.2f}", f"{r['words_per_s'][key]:,.0f}",
             f"{r['median_cpu_s'][key]:.2f}"] for key, median in r["median_wall_s"].items()]
    storage = [[label.format(num_bits=r["num_bits"]), f"{r['bytes_per_word'][key]:.2f}"]
               for key, label in STORAGE_LABELS.items()]
    return "\n".join([
        f"\narchive {archive_path} ({name}), K = {r['num_bits']}; {r['sentences']} sentences of {r['data']}, "
        f"{r['words']} words; in one process, archive loaded once ({r['load_s']:.1f} s); median of {r['rounds']} "
        f"rounds; {r['threads']} torch thread(s); device {r['cuda_device']}; codes differing: {r['codes_differ']}\n",
        common.markdown_table(["command", "runs", "median wall (s)", "words/s", "median CPU (s)"], rows, "llrrr"),
        f"\nhash-corpus ÷ best predict ({r['best_predict']}), words/s: {r['speedup_over_best_predict']:.2f}×\n",
        common.markdown_table(["storage", "bytes per word"], storage, "lr")])


def main() -> None:
    args = parse_args()
    import torch
    from allennlp.models.archival import load_archive

    import bitcode_allennlp.plugin  # noqa: F401
    from bitcode_allennlp.code_stage.shards import file_sha256

    if args.threads:
        torch.set_num_threads(args.threads)
    temporary = tempfile.TemporaryDirectory()
    work = Path(temporary.name)
    archive_path = args.archive or common.train_fixture_archive(temporary.name)
    name = args.name or ("fixture" if args.archive is None else Path(archive_path).resolve().parent.name)

    start = time.perf_counter()
    archive = load_archive(archive_path, cuda_device=args.cuda_device)
    load_s = time.perf_counter() - start
    model, reader = archive.model.eval(), archive.validation_dataset_reader
    data = common.dev_data(archive_path, args.data)
    reader.max_instances = args.sentences
    sentences = [instance["metadata"]["words"] for instance in reader.read(data)]
    words = sum(map(len, sentences))
    sha256 = file_sha256(archive_path)
    paths = command_paths(args, archive, archive_path, sha256, data, sentences, work)
    for run in paths.values():
        run()  # warm-up, and the outputs to compare
    wall, cpu = common.interleaved_times(paths, args.rounds)
    median, median_cpu = common.medians(wall), common.medians(cpu)
    speed = {key: words / median[key] for key in paths}
    best_predict = max((key for key in paths if key != "hash-corpus"), key=lambda key: speed[key])
    differ, storage = compare_outputs(work, sentences, model.num_bits, args.predict_batch_sizes[0])

    result = {
        "archive": archive_path if args.archive else "fixture NER archive (ner_hash.jsonnet, EPOCHS=1)",
        "archive_sha256": sha256, "num_bits": model.num_bits,
        "plm": archive.config.as_dict()["model"]["text_field_embedder"]["token_embedders"]["tokens"].get("model_name"),
        "data": str(data), "sentences": len(sentences), "words": words, "rounds": args.rounds,
        "mode": "in-process, one loaded archive for both; archive load timed apart",
        "hash_corpus_batch_words": args.batch_size, "hash_corpus_max_subtokens": args.max_subtokens,
        "predict_batch_sizes": args.predict_batch_sizes, "best_predict": best_predict, "load_s": load_s,
        "wall_s": wall, "cpu_s": cpu, "median_wall_s": median, "median_cpu_s": median_cpu, "words_per_s": speed,
        "speedup_over_best_predict": speed["hash-corpus"] / speed[best_predict], "codes_differ": differ,
        "bytes_per_word": storage, "threads": torch.get_num_threads(), "cuda_device": args.cuda_device,
        "machine": common.machine(torch_info=True),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "command": " ".join(sys.argv),
    }
    print(report(result, archive_path, name))
    common.write_named_result(args.out, name, result)
    temporary.cleanup()


if __name__ == "__main__":
    main()
