"""The pages that show output of a run, written from one committed run of `make demo` (`docs/demo_output/`).

    python docs/demo_pages.py           # rewrite the pages' demo blocks from docs/demo_output/
    python docs/demo_pages.py --check   # exit 1 when a page disagrees with docs/demo_output/ (tests/test_demo_pages.py)
    python docs/demo_pages.py --run     # = make demo-pages: run it all again into docs/demo_output/, then rewrite

`--run` (about 8 minutes on 2 CPU cores; it retrains runs/demo/ and writes runs/demo_paper_losses/) runs `make demo`
with `--retrain`, the same demo with the paper's losses alone (`--set CODE_HEAD=0 HEAD_LR=1e-3`), the `allennlp
bits` commands of docs/reading_codes.md on the demo's codes, and the Python examples of docs/python_api.md and
docs/predictors_spacy.md, and keeps what they print and write in docs/demo_output/ (`RUN_FILES`), with `run.json`:
when, where (commit, CPU, torch, threads) and how long.

A page's block between `<!-- demo-output: NAME -->` and `<!-- /demo-output -->` is what `BLOCKS[NAME]` makes of those
files; nothing else on a page is touched. Training is not bit-reproducible across machines (nor across thread
counts), so a fresh `make demo` gives other codes and nearby scores: the pages say so, and which run they show.
"""
import argparse
import difflib
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Sequence, Tuple

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "docs" / "demo_output"
DEMO = "runs/demo"
PAPER_LOSSES = "runs/demo_paper_losses"
PAGES = ("README.md", "docs/results.md", "docs/reading_codes.md", "docs/predictors_spacy.md", "docs/python_api.md")
MARK = re.compile(r"(<!-- demo-output: (?P<name>[a-z_]+) -->\n)(?P<body>.*?)(<!-- /demo-output -->)", re.DOTALL)

READING_COMMANDS = {
    "stats.txt": ["bits", "stats", f"{DEMO}/codes/dev.jsonl", "--json", "docs/demo_output/stats.json"],
    "heatmap.txt": ["bits", "heatmap", f"{DEMO}/codes/dev.jsonl", "--out", f"{DEMO}/heatmap.png", "--by",
                    "prefix,type"],
    "diff.txt": ["bits", "diff", f"{DEMO}/model/model.tar.gz", "I love Paris in the spring",
                 "I love Paris Hilton in the spring"],
    "search_london.txt": ["bits", "search", f"{DEMO}/index", "--word", "London", "--k", "5"],
    "precision.txt": ["bits", "precision", "--database", f"{DEMO}/codes/train.jsonl", "--queries",
                      f"{DEMO}/codes/dev.jsonl", "--k", "10", "--json", "docs/demo_output/precision.json"],
    "probe.txt": ["bits", "probe", "--train", f"{DEMO}/codes/train.jsonl", "--dev", f"{DEMO}/codes/dev.jsonl",
                  "--label-view", "type", "--json", "docs/demo_output/probe.json"],
}
"""docs/reading_codes.md's commands on the demo's codes: what each prints goes to the named file."""
GOLD = {
    "RT @BBCNews: Obama visits Berlin today": [("@BBCNews", "ORG"), ("Obama", "PER"), ("Berlin", "LOC")],
    "Taylor Swift and Ed Sheeran play Wembley Stadium in London tonight!": [
        ("Taylor Swift", "PER"), ("Ed Sheeran", "PER"), ("Wembley Stadium", "LOC"), ("London", "LOC")],
    "Just started my new job at Google in Manchester": [("Google", "ORG"), ("Manchester", "LOC")],
    "Flying from New York to Paris with Sarah this weekend": [("New York", "LOC"), ("Paris", "LOC"),
                                                               ("Sarah", "PER")],
    "Arsenal beat Chelsea at the Emirates, two goals from Theo Walcott": [
        ("Arsenal", "ORG"), ("Chelsea", "ORG"), ("Emirates", "LOC"), ("Theo Walcott", "PER")],
}
"""The entities of the demo's example sentences (`bitcode_allennlp.demo.EXAMPLES`), annotated by hand in BTC's
types, to count what the demo model finds."""
SCREENSHOTS = {"explorer_bits.png": "#bits?view=type&bit=4&label=PER", "explorer_word.png": "#word/London"}
"""The explorer of the demo's dev codes (`runs/demo/explorer/`) as headless Chromium shows it: file -> view."""
TABLE_SENTENCE = 2
"""The example sentence of the README's first table (0-based)."""


# ---------------------------------------------------------------------------------------------- --run: the run
def environment() -> Dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def run(command: Sequence[str], output: Path) -> float:
    """Runs `command` in the repository, its standard output into `output` (and echoed); returns the seconds."""
    print("$ " + " ".join(command), flush=True)
    start = time.time()
    result = subprocess.run(list(command), cwd=ROOT, env=environment(), capture_output=True, text=True)
    seconds = time.time() - start
    sys.stdout.write(result.stdout)
    if result.returncode != 0:
        sys.stderr.write(result.stderr)
        raise SystemExit(f"demo_pages: {' '.join(command[:3])} failed (exit status {result.returncode})")
    output.write_text(result.stdout, encoding="utf-8")
    return seconds


def python_block(page: str, before: str) -> str:
    """The last ```python block of `page` above the block named `before`."""
    text = (ROOT / page).read_text(encoding="utf-8")
    head = text[: text.index(f"<!-- demo-output: {before} -->")]
    return re.findall(r"```python\n(.*?)```", head, re.DOTALL)[-1]


def run_example(page: str, before: str, output: Path) -> float:
    """Runs a page's Python example as written; returns its seconds after `import bitcode_allennlp`."""
    timing = output.with_suffix(".seconds")
    code = (f"import time, bitcode_allennlp\n_start = time.time()\n{python_block(page, before)}"
            f"open({str(timing)!r}, 'w').write(str(time.time() - _start))\n")
    run([sys.executable, "-c", code], output)
    seconds = float(timing.read_text())
    timing.unlink()
    return seconds


def screenshots() -> None:
    """`SCREENSHOTS` of the demo's explorer, taken as the browser tests drive it (`tests/harness/browser.py`)."""
    if str(ROOT) not in sys.path:  # the test harness is outside the package, under the repository root
        sys.path.insert(0, str(ROOT))
    from tests.harness import browser as explore_browser

    driver = explore_browser.start_browser(1280, 800)
    try:
        page = (ROOT / DEMO / "explorer" / "index.html").as_uri()
        for name, fragment in SCREENSHOTS.items():
            explore_browser.open_page(driver, page + fragment)
            driver.save_screenshot(str(OUTPUT / name))
    finally:
        driver.quit()


def copy_demo(out: str, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("predictions.jsonl", "search.json"):
        shutil.copy(ROOT / out / name, folder / name)
    shutil.copy(ROOT / out / "model" / "metrics.json", folder / "metrics.json")


def git_commit() -> str:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True)
    return commit.stdout.strip() + (" with uncommitted changes" if dirty.stdout.strip() else "")


def run_all() -> None:
    """Everything the pages show, again, into docs/demo_output/ (see the module docstring)."""
    import torch

    if OUTPUT.exists():
        shutil.rmtree(OUTPUT)
    OUTPUT.mkdir(parents=True)
    record: Dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "commit": git_commit(),
                              "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores",
                              "python": platform.python_version(), "torch": torch.__version__,
                              "torch_threads": torch.get_num_threads()}
    record["demo_seconds"] = run([sys.executable, "-m", "bitcode_allennlp.demo", "--retrain"], OUTPUT / "demo.log")
    record["demo_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
    copy_demo(DEMO, OUTPUT)
    screenshots()
    for name, command in READING_COMMANDS.items():
        run(["allennlp", *command], OUTPUT / name)
    shutil.copy(ROOT / DEMO / "heatmap.json", OUTPUT / "heatmap.json")
    record["python_api_seconds"] = run_example("docs/python_api.md", "python_api", OUTPUT / "python_api.txt")
    run_example("docs/predictors_spacy.md", "spacy", OUTPUT / "spacy.txt")
    paper = OUTPUT / "paper_losses"
    paper.mkdir()
    run([sys.executable, "-m", "bitcode_allennlp.demo", "--retrain", "--out", PAPER_LOSSES, "--set", "CODE_HEAD=0",
         "HEAD_LR=1e-3"], paper / "demo.log")
    copy_demo(PAPER_LOSSES, paper)
    record["codes"] = code_facts(ROOT / DEMO / "codes" / "dev.jsonl")
    record["paper_losses_codes"] = code_facts(ROOT / PAPER_LOSSES / "codes" / "dev.jsonl")
    (OUTPUT / "run.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    relative_paths()


def relative_paths() -> None:
    """This checkout's folder left out of what the run printed and wrote (`/home/me/bitcode/fixtures/...` reads
    `fixtures/...`), so the files say nothing of the machine."""
    for path in sorted(OUTPUT.rglob("*")):
        if path.suffix in (".log", ".txt", ".json", ".jsonl"):
            text = path.read_text(encoding="utf-8").replace(f"file://{ROOT}/", "file:///…/")
            path.write_text(text.replace(str(ROOT) + "/", ""), encoding="utf-8")


def code_facts(codes_file: Path) -> Dict[str, Any]:
    """Words, distinct codes, and the most frequent code of the `O` words with its count, of a codes corpus."""
    from collections import Counter

    outside: Counter = Counter()
    codes, words = set(), 0
    for line in codes_file.read_text(encoding="utf-8").splitlines():
        sentence = json.loads(line)
        words += len(sentence["codes"])
        codes.update(sentence["codes"])
        outside.update(code for code, tag in zip(sentence["codes"], sentence["tags"]) if tag == "O")
    top, count = outside.most_common(1)[0]
    return {"words": words, "distinct_codes": len(codes), "outside_words": sum(outside.values()),
            "top_outside_code": top, "top_outside_count": count}


# ------------------------------------------------------------------------------------- the pages' blocks
class Run:
    """The files of docs/demo_output/, read once."""

    def __init__(self, folder: Path = OUTPUT) -> None:
        self.folder = folder
        self.record = self.json("run.json") if (folder / "run.json").exists() else {}
        self.log = self.text("demo.log").splitlines()
        self.predictions = [json.loads(line) for line in self.text("predictions.jsonl").splitlines()]
        self.metrics = self.json("metrics.json")

    def text(self, name: str) -> str:
        return (self.folder / name).read_text(encoding="utf-8")

    def json(self, name: str) -> Any:
        return json.loads(self.text(name))

    def hits(self, name: str = "search.json") -> List[Dict[str, Any]]:
        return self.json(name)["hits"]

    def query_word(self, log: Sequence[str] = ()) -> str:
        """The word whose code the demo searched for (its step 4 line)."""
        line = next(line for line in (log or self.log) if line.startswith("[4/4]"))
        return re.search(r"the code of '(.*)' \(sentence above\)", line).group(1)


def code_block(lines: Sequence[str]) -> str:
    return "```\n" + "\n".join(lines) + "\n```\n"


def between(lines: Sequence[str], start: str, stop: str) -> List[str]:
    """The lines from the first that starts with `start` up to (without) the next that starts with `stop`."""
    first = next(i for i, line in enumerate(lines) if line.startswith(start))
    last = next(i for i in range(first + 1, len(lines)) if lines[i].startswith(stop))
    return list(lines[first:last])


def sentence_blocks(lines: Sequence[str]) -> List[List[str]]:
    """Step 2's printed sentences: an entity line and the aligned rows, each block without the blank line."""
    step = between(lines, "$ allennlp predict", "[3/4]")[1:]
    blocks: List[List[str]] = []
    for line in step:
        if line.startswith("  ") and not line.startswith("    "):
            blocks.append([line])
        elif blocks and line.strip():
            blocks[-1].append(line)
        elif blocks and not line.strip() and blocks[-1][-1].strip():
            blocks[-1].append(line)
    for block in blocks:
        while not block[-1].strip():
            block.pop()
    return blocks


HIT_ROW = re.compile(r"\s*\| \d+ \| ")


def short_hit_row(line: str) -> str:
    """A search table row without its source (`…`)."""
    return line.rsplit(" | ", 1)[0] + " | … |" if HIT_ROW.match(line) else line


def paragraph(text: str) -> str:
    return textwrap.fill(text, width=116, break_on_hyphens=False, break_long_words=False) + "\n"


def entity_counts(run: Run) -> Dict[str, Any]:
    """The demo's entities on its example sentences against `GOLD`: found (words and type), missed, others."""
    from bitcode_allennlp.demo import EXAMPLES

    found, missed, others, total = 0, [], [], 0
    for sentence, prediction in zip(EXAMPLES, run.predictions):
        predicted = {(e["text"], e["label"]) for e in prediction["entities"]}
        gold = set(GOLD[sentence])
        total += len(gold)
        found += len(predicted & gold)
        missed += [text for text, _ in GOLD[sentence] if (text, dict(GOLD[sentence])[text]) not in predicted]
        others += sorted(f"{text} {label}" for text, label in predicted - gold)
    return {"total": total, "found": found, "missed": missed, "others": others}


def person_hits(hits: Sequence[Dict[str, Any]]) -> int:
    return sum(hit["labels"].get("type") == "PER" for hit in hits)


def run_note(run: Run, folder: str) -> str:
    record = run.record
    if folder.startswith("docs/"):  # the README: short
        return paragraph(f"(From the `make demo` run kept in [`{folder}`]({folder}) ({record['date']}, "
                         f"{record['machine'].split(', ')[-1]}; pages written by `docs/demo_pages.py`); training is "
                         "not bit-reproducible across machines: yours gives other codes.)")
    return textwrap.fill(f"(Output of one `make demo` run, {record['date']}, commit {record['commit'].split()[0]}, "
            f"{record['machine']}, torch {record['torch']} with {record['torch_threads']} threads, kept in "
            f"[`{folder}`]({folder}) and copied here by `python docs/demo_pages.py`. Training is not "
            "bit-reproducible across machines or thread counts: a fresh `make demo` gives other codes and nearby "
            "scores.)", width=116, break_on_hyphens=False) + "\n"


def readme_table(run: Run) -> str:
    prediction = run.predictions[TABLE_SENTENCE]
    rows = [["words", *prediction["words"]], ["tags", *prediction["tags"]], ["codes", *prediction["codes"]]]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    bits = len(prediction["bits"][0])
    lines[-1] += f"      (K = {bits} bits = {len(prediction['codes'][0])} hex digits per word)"
    return code_block(lines)


def done_line(run: Run) -> str:
    return next(line for line in run.log if line.startswith("done in"))


def epoch_lines(run: Run) -> List[str]:
    """The demo's line per finished epoch (`  epoch  3/10  dev span F1 ...`), not its progress lines in between."""
    return [line for line in run.log if line.startswith("  epoch ") and "dev span F1" in line]


def readme_excerpt(run: Run) -> str:
    epochs = epoch_lines(run)
    search = between(run.log, "$ allennlp bits search", "done in")
    lines = [epochs[-1], "  ...", next(line for line in run.log if line.startswith("$ allennlp predict")),
             *sentence_blocks(run.log)[1][:4], search[0],
             *[short_hit_row(line) for line in search if HIT_ROW.match(line)][:2], done_line(run)]
    return code_block(lines) + readme_summary(run)


def readme_summary(run: Run) -> str:
    counts = entity_counts(run)
    hits = run.hits()
    return paragraph(f"Of the {counts['total']} entities in its five example sentences it finds {counts['found']} and "
            f"predicts {len(counts['others']) or 'no'} other{'s' if len(counts['others']) != 1 else ''}; "
            f"{person_hits(hits)} of the {len(hits)} dev words nearest to the code of *{run.query_word()}* are "
            "person names.")


def results_log(run: Run) -> str:
    epochs = epoch_lines(run)
    train = between(run.log, "[1/4]", "  epoch ")
    best = next(line for line in run.log if line.startswith("  best dev"))
    predict = between(run.log, "[2/4]", "  ")
    blocks = sentence_blocks(run.log)
    search = between(run.log, "[4/4]", "done in")
    search = [line for line in search if not line.startswith("$ allennlp bits index") and "bytes on disk" not in line]
    table = [i for i, line in enumerate(search) if line.startswith("  | 4 |")][0]
    lines = [*train, epochs[0], "  ...", epochs[-1], best, *predict, "", *blocks[1], "", *blocks[3], "  ...",
             *[short_hit_row(line) for line in search[: table + 1]], "  ...",
             *run.log[run.log.index(done_line(run)):]]
    return code_block([line for i, line in enumerate(lines) if line or (i and lines[i - 1])])


def results_summary(run: Run) -> str:
    counts, codes, record = entity_counts(run), run.record["codes"], run.record
    paper = Run(run.folder / "paper_losses")
    paper_codes, paper_hits = record["paper_losses_codes"], paper.hits()
    others = ", ".join(f"`{other}`" for other in counts["others"]) or "none"
    f1 = run.metrics["best_validation_f1-measure-overall"]
    return paragraph(
        f"Of the {counts['total']} entities in its five example sentences it finds {counts['found']} (words and type "
        f"right; missed: {', '.join(f'`{m}`' for m in counts['missed']) or 'none'}; other predictions: {others}); "
        f"dev span F1 {100 * f1:.1f} on the 100 dev sentences; {person_hits(run.hits())} of the "
        f"{len(run.hits())} dev words nearest to the code of *{run.query_word()}* are person names. "
        f"{codes['top_outside_count'] / codes['outside_words']:.0%} of the `O` words share one code "
        f"(`{codes['top_outside_code']}`: {codes['top_outside_count']:,} of the {codes['outside_words']:,} in dev); "
        f"{codes['distinct_codes']:,} distinct codes for the {codes['words']:,} dev words. With the paper's losses "
        f"alone (`--set CODE_HEAD=0 HEAD_LR=1e-3`, [`paper_losses/`](demo_output/paper_losses/)) the same budget "
        f"gave dev F1 {100 * paper.metrics['best_validation_f1-measure-overall']:.1f}, but codes nearly one per "
        f"occurrence ({paper_codes['distinct_codes']:,} distinct for {paper_codes['words']:,} dev words), and "
        f"{person_hits(paper_hits)} person name(s) among the {len(paper_hits)} dev words nearest to the code of "
        f"*{paper.query_word()}* ({', '.join('*' + hit['word'] + '*' for hit in paper_hits[:4])}, …). "
        f"That `make demo` took {record['demo_seconds']:.0f} s in all, {record['demo_peak_rss_mb'] / 1024:.1f} GB "
        f"peak RSS.")


def search_london(run: Run) -> str:
    return code_block(run.text("search_london.txt").rstrip("\n").splitlines())


def heatmap_bits(run: Run, count: int = 3) -> Tuple[List[int], Dict[str, List[float]]]:
    """The `count` bits that best set `O` apart from every entity type (largest smallest gap), and P(bit = 1)."""
    panel = next(panel for panel in run.json("heatmap.json")["panels"] if panel["view"] == "type")
    p_one = dict(zip(panel["labels"], panel["p_one"]))
    types = [label for label in panel["labels"] if label != "O"]
    gap = [min(abs(p_one["O"][bit] - p_one[label][bit]) for label in types) for bit in range(len(p_one["O"]))]
    return sorted(sorted(range(len(gap)), key=lambda bit: -gap[bit])[:count]), p_one


def reading_summary(run: Run) -> str:
    bits, p_one = heatmap_bits(run)
    first = max(bits, key=lambda bit: min(abs(p_one["O"][bit] - p_one[t][bit]) for t in p_one if t != "O"))
    types = [label for label in p_one if label != "O"]
    share = sorted(p_one[label][first] for label in types)
    precision, probe = run.json("precision.json"), run.json("probe.json")["accuracy"]
    return paragraph(f"(On that model: {run.record['codes']['distinct_codes']:,} distinct codes for the "
            f"{run.record['codes']['words']:,} dev words; in the heatmap bits {', '.join(map(str, bits[:-1]))} and "
            f"{bits[-1]} set `O` apart from all {len(types)} entity types best, e.g. bit {first} is 1 for "
            f"{p_one['O'][first]:.0%} of `O` words and {share[0]:.0%}–{share[-1]:.0%} of {', '.join(types)} words; "
            f"precision@10 by entity type {100 * precision['precision']['type']:.2f}, chance "
            f"{100 * precision['chance']['type']:.2f}; the probe's 10-NN Hamming vote {100 * probe['knn']['10']:.2f} "
            f"dev accuracy by entity type, the word-majority baseline {100 * probe['word_majority']:.2f}.)")


def diff(run: Run) -> str:
    return code_block(run.text("diff.txt").rstrip("\n").splitlines())


def explorer(run: Run, folder: str = "demo_output/") -> str:
    """The screenshots of the demo's explorer."""
    return "".join(f"![the code explorer, {fragment}]({folder}{name})\n" for name, fragment in SCREENSHOTS.items())


def readme_explorer(run: Run) -> str:
    return f"![the code explorer, {SCREENSHOTS['explorer_bits.png']}](docs/demo_output/explorer_bits.png)\n"


def python_api(run: Run) -> str:
    return (code_block(run.text("python_api.txt").rstrip("\n").splitlines())
            + f"({run.record['python_api_seconds']:.1f} s after the import, most of it loading MiniLM.)\n")


def spacy(run: Run) -> str:
    return code_block(run.text("spacy.txt").rstrip("\n").splitlines())


BLOCKS: Dict[str, Callable[[Run], str]] = {
    "readme_table": readme_table, "readme_excerpt": readme_excerpt,
    "results_log": results_log, "results_summary": results_summary, "search_london": search_london,
    "reading_summary": reading_summary, "diff": diff, "explorer": explorer, "readme_explorer": readme_explorer,
    "python_api": python_api, "spacy": spacy,
}
"""Each block of the pages, by name, made from the run's files."""


def render(page: str, text: str, run: Run) -> str:
    """`text` of `page` with every demo block rewritten; the page's first block also says which run it shows."""
    folder = "docs/demo_output/" if page == "README.md" else "demo_output/"
    done: List[str] = []

    def block(match: "re.Match[str]") -> str:
        name = match.group("name")
        if name not in BLOCKS:
            raise SystemExit(f"demo_pages: {page}: no block named {name!r} (known: {', '.join(BLOCKS)})")
        body = BLOCKS[name](run)
        if not done:
            body += run_note(run, folder)
        done.append(name)
        return match.group(1) + body + match.group(4)

    return MARK.sub(block, text)


def main(argv: Sequence[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", action="store_true", help="run the demo and the pages' commands again first")
    parser.add_argument("--check", action="store_true", help="only say whether every page agrees with the files")
    args = parser.parse_args(argv)
    if args.run:
        run_all()
    run, stale = Run(), []
    for page in PAGES:
        path = ROOT / page
        text = path.read_text(encoding="utf-8")
        new = render(page, text, run)
        if new != text:
            stale.append(page)
            if args.check:
                diff = difflib.unified_diff(text.splitlines(True), new.splitlines(True), page, page, n=1)
                sys.stdout.writelines(diff)
            else:
                path.write_text(new, encoding="utf-8")
    if args.check and stale:
        print(f"demo_pages: {', '.join(stale)} disagree with docs/demo_output/ (python docs/demo_pages.py rewrites "
              "them)")
        return 1
    print(f"demo_pages: {len(PAGES)} pages agree with docs/demo_output/" + (f" ({', '.join(stale)} rewritten)"
                                                                            if stale else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
