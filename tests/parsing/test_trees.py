"""binarize / factorize / build: hand-checked spans, supar's algorithm, exact round trips (fixtures, random trees);
the trees module: pure Python, old import paths, constituents and back."""
import random
import subprocess
import sys

import nltk
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nltk import Tree

from bitcode_allennlp.data.dataset_readers.ptb_trees import read_trees
from bitcode_allennlp.structs.trees import clean_tree
from bitcode_allennlp.structs.binarization import binarize, build, factorize
from bitcode_allennlp.structs.trees import check_tree
from tests.data.helpers import fixture

FIXTURE_FILES = ["ptb/craft_train.tree", "ptb/craft_dev.tree", "ptb/hand_written.mrg"]

HOBBITS = ("(S (NP (NNS Hobbits)) (VP (VBP like) (S (VP (TO to) (VP (VB eat) (NP (NNS mushrooms)))))) (. .))")


# ------------------------------------------------------------------------------------ supar 1.1.4, the reference
# `Tree.binarize` and `Tree.factorize` of supar/utils/transform.py (MIT licence), with `+` joining unary chains.

def supar_binarize(tree):
    tree = tree.copy(True)
    if len(tree) == 1 and not isinstance(tree[0][0], nltk.Tree):
        tree[0] = nltk.Tree(f"{tree.label()}|<>", [tree[0]])
    nodes = [tree]
    while nodes:
        node = nodes.pop()
        if isinstance(node, nltk.Tree):
            nodes.extend([child for child in node])
            if len(node) > 1:
                for i, child in enumerate(node):
                    if not isinstance(child[0], nltk.Tree):
                        node[i] = nltk.Tree(f"{node.label()}|<>", [child])
    tree.chomsky_normal_form('left', 0, 0)
    tree.collapse_unary(joinChar='+')
    return tree


def supar_factorize(tree):
    def track(tree, i):
        label = tree.label()
        if len(tree) == 1 and not isinstance(tree[0], nltk.Tree):
            return i + 1, []
        j, spans = i, []
        for child in tree:
            j, s = track(child, j)
            spans += s
        if label is not None and j > i:
            spans = [(i, j, label)] + spans
        return j, spans
    return track(tree, 0)[1]


# ------------------------------------------------------------------------------------ helpers

def round_trip(tree: Tree) -> Tree:
    words, tags = zip(*tree.pos())
    return build(words, factorize(binarize(tree)), tags)


def assert_binary(spans, length):
    """`spans` are a full binary bracketing of `length` words, in preorder, every one labelled."""
    assert len(spans) == 2 * length - 1
    assert spans[0][:2] == (0, length)
    assert spans == sorted(spans, key=lambda span: (span[0], -span[1]))
    cells = {(i, j) for i, j, _ in spans}
    assert len(cells) == len(spans)
    for i, j, label in spans:
        assert label
        if j - i > 1:
            assert sum((i, k) in cells and (k, j) in cells for k in range(i + 1, j)) == 1


# ------------------------------------------------------------------------------------ hand-checked

def test_binarize_and_factorize_by_hand():
    tree = Tree.fromstring(HOBBITS)
    assert str(binarize(tree)) == (
        "(S\n  (S|<>\n    (NP (NNS Hobbits))\n    (VP\n      (VP|<> (VBP like))\n      (S+VP\n        (VP|<> (TO to))\n"
        "        (VP (VP|<> (VB eat)) (NP (NNS mushrooms))))))\n  (S|<> (. .)))"
    )
    assert factorize(binarize(tree)) == [
        (0, 6, "S"), (0, 5, "S|<>"), (0, 1, "NP"), (1, 5, "VP"), (1, 2, "VP|<>"), (2, 5, "S+VP"),
        (2, 3, "VP|<>"), (3, 5, "VP"), (3, 4, "VP|<>"), (4, 5, "NP"), (5, 6, "S|<>"),
    ]
    assert str(tree) == str(Tree.fromstring(HOBBITS))  # not changed
    flat = Tree.fromstring("(NP (DT a) (JJ b) (JJ c) (NN d))")
    assert factorize(binarize(flat)) == [
        (0, 4, "NP"), (0, 3, "NP|<>"), (0, 2, "NP|<>"), (0, 1, "NP|<>"), (1, 2, "NP|<>"), (2, 3, "NP|<>"),
        (3, 4, "NP|<>"),
    ]


@pytest.mark.parametrize(
    "text, spans",
    [
        ("(NN x)", [(0, 1, "TOP|<>")]),  # a one-word tree without a phrase
        ("(NP (NN x))", [(0, 1, "NP")]),
        ("(FRAG (NP (NNP Gandalf)))", [(0, 1, "FRAG+NP")]),
        ("(TOP (NN a) (NN b))", [(0, 2, "TOP"), (0, 1, "TOP|<>"), (1, 2, "TOP|<>")]),  # unlabelled root, cleaned
        ("(S (S (VP (VB go))) (. .))", [(0, 2, "S"), (0, 1, "S+VP"), (1, 2, "S|<>")]),
        ("(NP (NP (NP (NN a)) (NN b)))", [(0, 2, "NP+NP"), (0, 1, "NP"), (1, 2, "NP|<>")]),
    ],
)
def test_small_trees(text, spans):
    tree = Tree.fromstring(text)
    assert factorize(binarize(tree)) == spans
    assert round_trip(tree) == Tree("TOP", [tree])


def test_build_debinarizes_in_any_order_and_takes_partial_bracketings():
    words = "Hobbits like to eat mushrooms .".split()
    spans = factorize(binarize(Tree.fromstring(HOBBITS)))
    shuffled = list(spans)
    random.Random(1).shuffle(shuffled)
    expected = Tree("TOP", [Tree.fromstring(HOBBITS)])
    tags = ["NNS", "VBP", "TO", "VB", "NNS", "."]
    assert build(words, shuffled, tags) == expected
    # Without tags, words go under XX.
    assert build(words, spans).pos() == [(word, "XX") for word in words]
    # No span of its own: the word goes under the smallest span around it; None / "" / "|<>" add no node.
    assert str(build(["a", "b", "c"], [(0, 3, "S"), (1, 3, "VP")])) == "(TOP (S (XX a) (VP (XX b) (XX c))))"
    assert str(build(["a", "b", "c"], [(0, 3, None), (0, 1, ""), (1, 3, "X|<>")])) == "(TOP (XX a) (XX b) (XX c))"
    assert str(build(["a", "b"], [(0, 2, "S|<>"), (1, 2, "A+B+C")])) == "(TOP (XX a) (A (B (C (XX b)))))"
    assert str(build(["a"], [])) == "(TOP (XX a))"
    assert str(build(["a"], [], root_label="")) == "( (XX a))"


@pytest.mark.parametrize(
    "spans, message",
    [
        ([(0, 2, "A"), (1, 3, "B")], "spans (0, 2) and (1, 3) cross"),
        ([(0, 3, "A"), (0, 3, "B")], "span (0, 3) is given twice"),
        ([(2, 4, "A")], "span (2, 4) is outside a sentence of 3 words"),
        ([(1, 1, "A")], "span (1, 1) is outside"),
    ],
)
def test_build_rejects_bad_spans(spans, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build(["a", "b", "c"], spans)


def test_build_rejects_wrong_number_of_tags():
    with pytest.raises(ValueError, match="2 part-of-speech tags for 3 words"):
        build(["a", "b", "c"], [], ["NN", "NN"])


@pytest.mark.parametrize(
    "text, message",
    [
        ("(S (NP+X (NN a)) (VB b))", "phrase label 'NP+X'"),
        ("(S (NP|<> (NN a)) (VB b))", "phrase label 'NP|<>'"),
        ("(S a (NN b))", "has a word or an empty node beside other children"),
        ("(S (NN a) (NP))", "has a word or an empty node"),
    ],
)
def test_binarize_rejects_reserved_labels_and_loose_words(text, message):
    tree = Tree.fromstring(text)
    with pytest.raises(ValueError, match=message.replace("|", r"\|").replace("+", r"\+").replace("(", r"\(")):
        binarize(tree)
    with pytest.raises(ValueError):
        check_tree(tree)


# ------------------------------------------------------------------------------------ fixtures and real data

@pytest.mark.parametrize("name", FIXTURE_FILES)
def test_every_fixture_tree_round_trips_and_matches_supar(name):
    path = fixture(name)
    count = 0
    for tree, source in read_trees(path):
        cleaned = clean_tree(str(path), 0, tree)
        binary = binarize(cleaned)
        spans = factorize(binary)
        assert_binary(spans, len(cleaned.leaves()))
        assert spans == supar_factorize(supar_binarize(Tree("TOP", [cleaned]))[0]), source
        assert round_trip(cleaned) == Tree("TOP", [cleaned]), source
        count += 1
    assert count == {"ptb/craft_train.tree": 60, "ptb/craft_dev.tree": 25, "ptb/hand_written.mrg": 7}[name]


# ------------------------------------------------------------------------------------ property-based

PHRASES = st.sampled_from(["S", "NP", "VP", "PP", "PRT|ADVP", "TOP", "-X-", "SBAR", "S1"])
TAGS = st.sampled_from(["NN", "DT", ",", ".", "``", "-LRB-", "PRP$", "A+B", "X|<>"])
WORDS = st.text(alphabet="ab-*'`$.,:;|{}+<>", min_size=1, max_size=4)


def trees(depth: int):
    leaf = st.builds(lambda tag, word: Tree(tag, [word]), TAGS, WORDS)
    if depth == 0:
        return leaf
    return st.one_of(leaf, st.builds(Tree, PHRASES, st.lists(trees(depth - 1), min_size=1, max_size=4)))


@settings(max_examples=300, deadline=None)
@given(trees(5))
def test_random_trees_round_trip(tree):
    spans = factorize(binarize(tree))
    assert_binary(spans, len(tree.leaves()))
    assert spans == supar_factorize(supar_binarize(Tree("TOP", [tree]))[0])
    assert round_trip(tree) == Tree("TOP", [tree])


# ------------------------------------------------------------------------------------ one module for trees


def test_trees_module_imports_neither_allennlp_nor_torch(tmp_path):
    """spaCy's extensions and the light `allennlp bits` process import it; a malformed file still gives a
    `DataFormatError`, imported when it is made."""
    bad = tmp_path / "bad.mrg"
    bad.write_text("(S (NN a)) )\n")
    code = ("import sys, bitcode_allennlp.structs.trees as t; "
            "print('allennlp' in sys.modules, 'torch' in sys.modules); "
            "print([type(item).__name__ for item in t.scan_trees(sys.argv[1])])")
    result = subprocess.run([sys.executable, "-c", code, str(bad)], capture_output=True, text=True, timeout=300)
    assert result.stdout.splitlines() == ["False False", "['RawTree', 'DataFormatError']"], result.stderr[-3000:]


def test_constituent_trees_invert_tree_constituents():
    """The trees spaCy's `parse_string` writes from the stored constituents are the predictor's tree, constituent by
    constituent (fixture trees under `TOP`, with words and tags that need escapes)."""
    from bitcode_allennlp.structs.trees import (
        constituent_trees,
        ptb_escape,
        tree_constituents,
        tree_leaves,
        tree_pos,
        tree_to_json,
        tree_to_ptb,
        tree_to_string,
    )

    trees = [clean_tree(path, 1, tree) for name in FIXTURE_FILES for tree, path in read_trees(fixture(name))]
    trees.append(Tree.fromstring("(S (NP (-LRB- {) (NN a)) (VP (VB b) (NP (NN c))) (. ])) "))
    trees.append(Tree.fromstring("(NP (NN a))"))
    for tree in trees:
        pos = tree_pos(tree)
        constituents = tree_constituents(tree_to_json(Tree("TOP", [tree])))
        starts, ends, labels = (list(column) for column in zip(*constituents))
        for position, (start, end, _) in enumerate(constituents):
            written = constituent_trees(starts, ends, labels, position,
                                        lambda i: (ptb_escape(pos[i][1]), ptb_escape(pos[i][0])))
            assert [tree_leaves(t) for t in written] == [[ptb_escape(w) for w, _ in pos[start:end]]]
        # the whole sentence: the tree itself (its phrase labels need no escapes)
        assert " ".join(map(tree_to_string, constituent_trees(starts, ends, labels, 0, lambda i: (
            ptb_escape(pos[i][1]), ptb_escape(pos[i][0]))))) == tree_to_ptb(tree)
    several = tree_constituents(tree_to_json(Tree.fromstring("(TOP (XX a) (NP (XX b)))")))
    starts, ends, labels = (list(column) for column in zip(*several))
    assert [tree_to_string(t) for t in constituent_trees(starts, ends, labels, 0, lambda i: ("XX", "ab"[i]))] == [
        "(XX a)", "(NP (XX b))"]
