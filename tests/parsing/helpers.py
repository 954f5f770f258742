"""The real EVALB program (compiled from the source AllenNLP ships) and random edits of trees, for the EVALB tests."""
import os
import random
import re
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import allennlp
from nltk import Tree

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


# EVALB's summary lines -> keys of `evalb_score`.
SUMMARY_KEYS = {
    "Number of sentence": "sentences",
    "Number of Error sentence": "error_sentences",
    "Number of Skip sentence": "skipped_sentences",
    "Number of Valid sentence": "valid_sentences",
    "Bracketing Recall": "recall",
    "Bracketing Precision": "precision",
    "Bracketing FMeasure": "f1",
    "Complete match": "exact",
    "Average crossing": "average_crossing",
    "No crossing": "no_crossing",
    "2 or less crossing": "two_or_less_crossing",
    "Tagging accuracy": "tagging_accuracy",
}


def printed_summary(summary: Dict[str, float]) -> Dict[str, str]:
    """`evalb_score`'s summary as EVALB prints it (`%d`, `%.2f`; F1 without matches is `nan` there, 0 here)."""
    return {name: (f"{summary[key]:.2f}" if isinstance(summary[key], float) else str(summary[key]))
            for name, key in SUMMARY_KEYS.items()}


def normalized_evalb_summary(section: Dict[str, str]) -> Dict[str, str]:
    return {name: ("0.00" if value in ("nan", "-nan") else value) for name, value in section.items()}


def within_evalb_limits(*lines: str) -> bool:
    """Whether EVALB's buffers hold these one-line trees."""
    for line in lines:
        if len(line.encode("utf-8")) > MAX_LINE_BYTES:
            return False
        tree = Tree.fromstring(line)
        if len(tree.leaves()) > MAX_WORDS:
            return False
        phrases = [node for node in tree.subtrees() if not isinstance(node[0], str)]
        if len(phrases) > MAX_BRACKETS:
            return False
        if any(len(node.label().encode("utf-8")) > MAX_LABEL_BYTES for node in tree.subtrees()):
            return False
        if any(len(word.encode("utf-8")) > MAX_WORD_BYTES for word in tree.leaves()):
            return False
    return True


# ------------------------------------------------------------------------------------ random edits

PUNCTUATION = (",", ":", ".", "``", "''")
LABELS = ("S", "NP", "VP", "PP", "ADJP", "ADVP", "PRT", "SBAR", "NML", "QP", "NP-SBJ", "PP-LOC=2", "S-TPC-1")
TAGS = ("NN", "JJ", "VB", "DT", "IN", "?", "!")


def _is_preterminal(node) -> bool:
    return isinstance(node, Tree) and len(node) == 1 and isinstance(node[0], str)


def _positions(tree: Tree, phrases: bool) -> List[Tuple[int, ...]]:
    return [position for position in tree.treepositions()
            if isinstance(tree[position], Tree) and _is_preterminal(tree[position]) != phrases]


def _delete(tree: Tree, rng: random.Random) -> None:
    positions = [position for position in _positions(tree, True) if position]
    if positions:
        position = rng.choice(positions)
        parent, index = tree[position[:-1]], position[-1]
        parent[index:index + 1] = list(tree[position])


def _add(tree: Tree, rng: random.Random) -> None:
    positions = _positions(tree, True)
    if not positions:
        return
    node = tree[rng.choice(positions)]
    start = rng.randrange(len(node))
    end = rng.randrange(start + 1, len(node) + 1)
    node[start:end] = [Tree(rng.choice(LABELS), list(node[start:end]))]


def _relabel(tree: Tree, rng: random.Random) -> None:
    positions = [position for position in _positions(tree, True) if position]
    if positions:
        tree[rng.choice(positions)].set_label(rng.choice(LABELS))


def _swap_advp_prt(tree: Tree, rng: random.Random) -> None:
    positions = [position for position in _positions(tree, True) if tree[position].label() in ("ADVP", "PRT")]
    if positions:
        node = tree[rng.choice(positions)]
        node.set_label("PRT" if node.label() == "ADVP" else "ADVP")


def _move_punctuation(tree: Tree, rng: random.Random) -> None:
    """Moves a punctuation mark up or down the tree, keeping the order of the words."""
    positions = [position for position in _positions(tree, False)
                 if tree[position].label() in PUNCTUATION and len(position) >= 2]
    if not positions:
        return
    position = rng.choice(positions)
    parent, index = tree[position[:-1]], position[-1]
    mark = parent[index]
    moves = []
    if len(parent) > 1 and len(position) >= 3 and index in (0, len(parent) - 1):
        moves.append("up")
    if index > 0 and not _is_preterminal(parent[index - 1]):
        moves.append("into left")
    if index < len(parent) - 1 and not _is_preterminal(parent[index + 1]):
        moves.append("into right")
    if not moves:
        return
    move = rng.choice(moves)
    if move == "up":
        grandparent, parent_index = tree[position[:-2]], position[-2]
        del parent[index]
        grandparent.insert(parent_index + (index > 0), mark)
    elif move == "into left":
        del parent[index]
        parent[index - 1].append(mark)
    else:
        del parent[index]
        parent[index].insert(0, mark)


def _wrap_punctuation(tree: Tree, rng: random.Random) -> None:
    positions = [position for position in _positions(tree, False) if tree[position].label() in PUNCTUATION
                 and position]
    if positions:
        position = rng.choice(positions)
        tree[position[:-1]][position[-1]] = Tree(rng.choice(LABELS), [tree[position]])


def _duplicate(tree: Tree, rng: random.Random) -> None:
    positions = [position for position in _positions(tree, True) if position]
    if positions:
        position = rng.choice(positions)
        node = tree[position]
        tree[position[:-1]][position[-1]] = Tree(node.label(), [node])


def _retag(tree: Tree, rng: random.Random) -> None:
    positions = [position for position in _positions(tree, False) if tree[position].label() not in PUNCTUATION]
    if positions:
        tree[rng.choice(positions)].set_label(rng.choice(TAGS))


def _retag_punctuation(tree: Tree, rng: random.Random) -> None:
    """Makes EVALB delete one more or one less word: a "Length unmatch" error."""
    position = rng.choice(_positions(tree, False))
    node = tree[position]
    node.set_label("NN" if node.label() in PUNCTUATION else ".")


def _change_word(tree: Tree, rng: random.Random) -> None:
    """A "Words unmatch" error."""
    position = rng.choice(_positions(tree, False))
    tree[position][0] = tree[position][0] + "x"


EDITS = (_delete, _add, _relabel, _swap_advp_prt, _move_punctuation, _wrap_punctuation, _duplicate, _retag)
ERRORS = (_retag_punctuation, _change_word)


def perturb(tree: Tree, rng: random.Random, errors: float = 0.0, max_edits: int = 4) -> Tree:
    """A copy of `tree` with 0 to `max_edits` random edits; with probability `errors`, one that EVALB rejects."""
    tree = tree.copy(deep=True)
    for _ in range(rng.randint(0, max_edits)):
        rng.choice(EDITS)(tree, rng)
    if rng.random() < errors:
        rng.choice(ERRORS)(tree, rng)
    return tree
