"""The code explorer (`allennlp bits explore`) at scale, in a real browser: first render and the answer to a click on
the codes of the entire EWT train file (204,577 words), against a 1% slice of the same codes in the same run.

    python benchmarks/explorer.py                      # makes the EWT codes first (about 3 minutes on 2 CPU cores)
    python benchmarks/explorer.py --codes runs/x/codes/train.jsonl --rounds 5

The codes (unless `--codes`): `training_configs/pos_hash.jsonnet` trained one epoch on the fixtures' EWT sample
(`READER=conllu_pos`, the tiny random BERT of the fixtures: the volume of data is what counts here, not the codes'
quality), then `allennlp hash-corpus` of `../shared/data/pos/ud_english_ewt/en_ewt-ud-train.conllu`. Both explorers
are written by `allennlp bits explore` and opened from `file://` in headless Chromium (`tests/harness/browser.py`);
each action is timed from the navigation or click to the end of the page's render (its `data-ready` stamp), in
rounds that alternate the two corpora; medians. The actions:

* first render: a fresh page load of `#corpus` (meta and the first sentence shard only);
* click a word: a token of the corpus page -> the word view (its occurrences, and its 10 Hamming neighbours over
  every entry: the first click also loads the entries file, `first click` below; later clicks reuse it);
* filter by word, code view, bit view with a clicked cell, next corpus page, the diff of two sentences.

Prints a markdown table; writes `runs/benchmarks/explorer.json` (`--update-results`: benchmarks/results/).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

import common

EWT_TRAIN = common.SHARED_DATA / "pos" / "ud_english_ewt" / "en_ewt-ud-train.conllu"
OUT = common.RESULTS / "explorer.json"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--codes", help="a codes corpus (default: the EWT train codes, made under --work)")
    parser.add_argument("--work", default=str(common.ROOT / "runs" / "explorer_work"),
                        help="where the EWT codes and the explorers are written (never under benchmarks/results)")
    parser.add_argument("--small-share", type=float, default=0.01, help="the baseline slice of the corpus")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default=str(OUT))
    return common.parse_args(parser)


def allennlp(*args: Any, **variables: str) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **variables}
    subprocess.run([sys.executable, "-m", "allennlp", *map(str, args)], check=True, cwd=common.ROOT, env=env,
                   capture_output=True, text=True)


def ewt_codes(work: Path) -> Path:
    """The EWT train codes of a fixture POS model (made once under `work`)."""
    codes = work / "ewt_train.codes.jsonl"
    if codes.is_file():
        return codes
    if not EWT_TRAIN.is_file():
        raise SystemExit(f"{EWT_TRAIN} not found (the corpora live beside the repository); or give --codes")
    fixtures = common.ROOT / "fixtures" / "data" / "conllu"
    allennlp("train", "training_configs/pos_hash.jsonnet", "-s", work / "pos_model", "--force", EPOCHS="1",
             READER="conllu_pos", TRAIN_DATA=str(fixtures / "ewt_train.conllu"),
             DEV_DATA=str(fixtures / "ewt_dev.conllu"))
    allennlp("hash-corpus", work / "pos_model" / "model.tar.gz", EWT_TRAIN, "-o", codes, "--silent")
    return codes


def explorer(codes: Path, out: Path, max_sentences: int = 0) -> Dict[str, Any]:
    start = time.perf_counter()
    args = ["bits", "explore", codes, "--out", out] + (["--max-sentences", max_sentences] if max_sentences else [])
    allennlp(*args)
    size = sum(path.stat().st_size for path in out.rglob("*") if path.is_file())
    entries = (out / "data" / "entries.js").stat().st_size
    return {"seconds_to_write": time.perf_counter() - start, "bytes": size, "entries_bytes": entries}


def actions(driver: Any, url: str) -> Dict[str, Callable[[], float]]:
    """Each action: seconds from navigation or click to the rendered view."""
    eb = common.harness("browser")

    def first_render() -> float:
        return eb.open_page(driver, url + "#corpus")

    def click_word(first: bool) -> Callable[[], float]:
        def run() -> float:
            if first:
                eb.open_page(driver, url + "#corpus")  # a fresh page: the click loads the entries file
            else:
                eb.go(driver, "#corpus")
            token = driver.find_elements("css selector", ".sentence .tok")[3]
            return eb.click(driver, token)
        return run

    def bit_cell() -> float:
        eb.go(driver, "#bits")
        cell = driver.find_element("css selector", "#heatmap tr[data-label] td[data-bit='5']")
        return eb.click(driver, cell)

    def next_page() -> float:
        eb.go(driver, "#corpus?page=3")
        return eb.click(driver, driver.find_element("css selector", ".pager a.next"))

    return {
        "first render (#corpus)": first_render,
        "first click on a word (loads entries)": click_word(True),
        "click on a word (word view, 10 neighbours)": click_word(False),
        "filter by word (#corpus?word=the)": lambda: eb.go(driver, "#corpus?word=the"),
        "code view": lambda: eb.go(driver, "#code/" + driver.find_element("css selector", ".tok")
                                   .get_attribute("data-code")),
        "click a bit cell (bit view)": bit_cell,
        "next corpus page": next_page,
        "diff of two sentences": lambda: eb.go(driver, "#diff?a=10&b=11"),
    }


def main() -> None:
    args = parse_args()
    eb = common.harness("browser")

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    codes = Path(args.codes) if args.codes else ewt_codes(work)
    with open(codes, encoding="utf-8") as file:
        lengths = [len(json.loads(line)["codes"]) for line in file if line.strip()]
    sentences, words = len(lengths), sum(lengths)
    corpora = {"full": (work / "explorer_full", 0), "slice": (work / "explorer_slice",
                                                              max(1, round(sentences * args.small_share)))}
    written = {name: explorer(codes, folder, limit) for name, (folder, limit) in corpora.items()}
    driver = eb.start_browser()
    times: Dict[str, Dict[str, List[float]]] = {name: {} for name in corpora}
    errors: List[str] = []
    try:
        for round_ in range(args.rounds):
            for name in (list(corpora) if round_ % 2 == 0 else list(reversed(corpora))):
                url = (corpora[name][0] / "index.html").resolve().as_uri()
                for action, run in actions(driver, url).items():
                    times[name].setdefault(action, []).append(run())
                errors += eb.console_errors(driver)
    finally:
        driver.quit()
    medians = {name: {action: statistics.median(values) for action, values in by.items()} for name, by in times.items()}
    rows = [(action, f"{1000 * medians['full'][action]:.0f}", f"{1000 * medians['slice'][action]:.0f}",
             f"{medians['full'][action] / medians['slice'][action]:.2f}") for action in medians["full"]]
    print(f"explorer of {codes} ({sentences:,} sentences, {words:,} words) vs its first "
          f"{corpora['slice'][1]:,} sentences; headless Chromium, file://, medians of {args.rounds} rounds\n")
    print(common.markdown_table(["action", "full (ms)", "slice (ms)", "full / slice"], rows, "lrrr"))
    full = written["full"]
    print(f"\nwritten: full {full['bytes'] / common.MB:.1f} MB in {full['seconds_to_write']:.1f} s "
          f"(entries {full['entries_bytes'] / common.MB:.1f} MB); console errors: {len(errors)}")
    common.write_json(args.out, {
        "command": common.command_line(), "machine": common.machine(), "codes": str(codes), "sentences": sentences,
        "words": words, "slice_sentences": corpora["slice"][1], "rounds": args.rounds, "written": written,
        "median_seconds": medians, "all_seconds": times, "console_errors": errors,
    })
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
