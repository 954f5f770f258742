"""Random edits of trees and EVALB summary helpers for the EVALB tests (the program itself: `evalb_program`)."""
import random
from typing import Dict, List, Tuple

from nltk import Tree

from tests.harness.evalb_program import (  # noqa: F401 (re-exported for the tests)
    COLLINS_PRM,
    EVALB_SOURCE,
    MAX_BRACKETS,
    MAX_LABEL_BYTES,
    MAX_LINE_BYTES,
    MAX_WORD_BYTES,
    MAX_WORDS,
    EvalbOutput,
    compile_evalb,
    run_evalb,
    within_evalb_limits,
)


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
