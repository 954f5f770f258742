"""The real EVALB program (Sekine & Collins), compiled from the C source AllenNLP ships, and run on one-line trees.

Where this sits: test harness (`tests.harness`), a reference to check `bitcode_allennlp.parsing.metrics.evalb` (our
pure-Python scorer) against, used by the tests and by `benchmarks/parse_real_data.py`. Needs a C compiler (gcc or
cc); nothing else uses it.
"""
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import allennlp
from nltk import Tree

from bitcode_allennlp.structs.trees import subtrees, tree_leaves

EVALB_SOURCE = Path(allennlp.__file__).resolve().parent / "tools" / "EVALB"
COLLINS_PRM = EVALB_SOURCE / "COLLINS.prm"

# EVALB's fixed buffers (evalb.c): beyond them it misreads or crashes, so tests keep below them.
MAX_LINE_BYTES = 4999
MAX_WORDS = 200
MAX_BRACKETS = 200
MAX_LABEL_BYTES = 29
MAX_WORD_BYTES = 99


def compile_evalb(directory: Path) -> Tuple[Optional[str], str]:
    """(path of an `evalb` executable, "") or (None, why not): compiles `evalb.c` into `directory`."""
    source = EVALB_SOURCE / "evalb.c"
    if not source.exists():
        return None, f"{source} not found"
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        return None, "no C compiler (gcc or cc) on PATH"
    binary = directory / "evalb"
    result = subprocess.run([compiler, "-O2", "-w", "-o", str(binary), str(source)], capture_output=True, text=True)
    if result.returncode != 0 or not os.access(binary, os.X_OK):
        return None, f"compiling {source} failed: {result.stderr[-2000:]}"
    return str(binary), ""


class EvalbOutput(NamedTuple):
    rows: List[Tuple[str, ...]]  # the 12 columns of each sentence, as printed
    summaries: Dict[str, Dict[str, str]]  # "All" / "len<=40" -> {name: value as printed}
    stderr: str


def run_evalb(binary: str, gold: Sequence[str], test: Sequence[str], directory: Path,
              parameters: Path = COLLINS_PRM) -> EvalbOutput:
    """Runs `evalb -p parameters -e <no limit> gold test` on one-line trees and parses what it prints."""
    gold_path, test_path = directory / "gold.txt", directory / "test.txt"
    gold_path.write_bytes("".join(line + "\n" for line in gold).encode("utf-8"))
    test_path.write_bytes("".join(line + "\n" for line in test).encode("utf-8"))
    result = subprocess.run([binary, "-p", str(parameters), "-e", "1000000", str(gold_path), str(test_path)],
                            capture_output=True, check=True)
    stdout = result.stdout.decode("utf-8", errors="replace")
    rows, summaries, section = [], {}, None
    for line in stdout.splitlines():
        fields = line.split()
        if len(fields) == 12 and re.fullmatch(r"\d+", fields[0]):
            rows.append(tuple(fields))
        match = re.fullmatch(r"-- (.*) --", line.strip())
        if match:
            section = match.group(1)
            summaries[section] = {}
        elif section and "=" in line:
            name, value = line.split("=")
            summaries[section][" ".join(name.split())] = value.strip()
    return EvalbOutput(rows, summaries, result.stderr.decode("utf-8", errors="replace"))


def within_evalb_limits(*lines: str) -> bool:
    """Whether EVALB's buffers hold these one-line trees."""
    for line in lines:
        if len(line.encode("utf-8")) > MAX_LINE_BYTES:
            return False
        tree = Tree.fromstring(line)
        words = tree_leaves(tree)
        if len(words) > MAX_WORDS:
            return False
        nodes = list(subtrees(tree))
        phrases = [node for node in nodes if not isinstance(node[0], str)]
        if len(phrases) > MAX_BRACKETS:
            return False
        if any(len(node.label().encode("utf-8")) > MAX_LABEL_BYTES for node in nodes):
            return False
        if any(len(word.encode("utf-8")) > MAX_WORD_BYTES for word in words):
            return False
    return True
