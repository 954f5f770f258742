import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nltk import Tree

from bitcode_allennlp.host.errors import DataFormatError
from bitcode_allennlp.data.dataset_readers.ptb_trees import PtbHashDatasetReader, read_trees
from bitcode_allennlp.structs.trees import (
    clean_tree,
    remove_traces,
    strip_function_tags,
    strip_root_wrappers,
    tree_to_string,
)
from tests.data.helpers import read, read_error, write

MRG = """\
( (S
    (NP-SBJ-1 (DT The) (NN ring) )
    (VP (VBD was)
      (VP (VBN found)
        (NP-1 (-NONE- *-1) )
        (PP-LOC=2 (IN in)
          (NP (-LRB- -LRB-) (NNP Gollum) (-RRB- -RRB-) (POS 's) (NN cave) ))))
    (. .) ))
(TOP (FRAG (`` ``) (NP (NNP Precious)) ('' '') (: --) (-NONE- *U*)))
(ROOT (NP (NN Ring)))   (S (NP (-LCB- -LCB-)) (VP (VB go) (-RCB- -RCB-)))
"""


def test_multi_line_trees_traces_wrappers_and_escapes(tmp_path):
    path = write(tmp_path, "wsj_0001.mrg", MRG)
    assert read(PtbHashDatasetReader(), path) == [
        (["The", "ring", "was", "found", "in", "-LRB-", "Gollum", "-RRB-", "'s", "cave", "."],
         ["DT", "NN", "VBD", "VBN", "IN", "-LRB-", "NNP", "-RRB-", "POS", "NN", "."], f"{path}:1"),
        (["``", "Precious", "''", "--"], ["``", "NNP", "''", ":"], f"{path}:9"),
        (["Ring"], ["NN"], f"{path}:10"),
        (["-LCB-", "go", "-RCB-"], ["-LCB-", "VB", "-RCB-"], f"{path}:10"),
    ]
    # A directory is read as its .mrg files.
    write(tmp_path / "sub", "wsj_0002.mrg", "(S (NN x))\n")
    write(tmp_path, "notes.txt", "not a tree")
    assert [words for words, _, _ in read(PtbHashDatasetReader(), str(tmp_path))][-1] == ["x"]


def test_clean_tree_for_the_constituency_reader(tmp_path):
    path = write(tmp_path, "a.mrg", MRG)
    (first, source), (second, _), (third, _), (fourth, _) = read_trees(path)
    assert source == f"{path}:1"
    assert tree_to_string(clean_tree(path, 1, first)) == (
        "(S (NP (DT The) (NN ring)) (VP (VBD was) (VP (VBN found) (PP (IN in) (NP (-LRB- -LRB-) (NNP Gollum) "
        "(-RRB- -RRB-) (POS 's) (NN cave))))) (. .))"
    )
    assert tree_to_string(clean_tree(path, 1, first, function_tags=False)).startswith("(S (NP-SBJ-1 (DT The)")
    assert tree_to_string(clean_tree(path, 9, second)) == "(FRAG (`` ``) (NP (NNP Precious)) ('' '') (: --))"
    assert tree_to_string(clean_tree(path, 10, third)) == "(NP (NN Ring))"
    assert tree_to_string(first).startswith("( (S (NP-SBJ-1")  # parse_tree keeps everything as written


@pytest.mark.parametrize(
    "label, stripped",
    [("NP-SBJ-1", "NP"), ("PP-LOC=2", "PP"), ("NP=3", "NP"), ("S-TPC-1", "S"), ("-NONE-", "-NONE-"),
     ("-LRB-", "-LRB-"), ("PRP$", "PRP$"), ("NML", "NML"), ("ADVP-TMP-2", "ADVP"), ("NP-SBJ-1=2", "NP")],
)
def test_strip_function_tags(label, stripped):
    assert strip_function_tags(label) == stripped


def test_remove_traces_and_root_wrappers():
    tree = Tree.fromstring("( (S (NP (-NONE- *)) (VP (VB go) (S (NP (-NONE- *PRO*)))) (-NONE- *T*)))")
    assert tree_to_string(strip_root_wrappers(remove_traces(tree))) == "(S (VP (VB go)))"
    assert remove_traces(Tree.fromstring("(S (NP (-NONE- *)))")) is None
    assert strip_root_wrappers(Tree("", [Tree("NN", ["a"]), Tree("NN", ["b"])])).label() == "TOP"
    assert strip_root_wrappers(Tree.fromstring("(TITLE (NP (NN x)))")).label() == "TITLE"


@pytest.mark.parametrize(
    "text, line, words",
    [
        ("(S (NP (NN a))\n(S (NN b))\n", 1, "the '(' at column 1 is not closed before the tree that starts at line 3"),
        ("(S (NN ok))\n  (S (NP (NN a))\n   (NN b)\n", 2,
         "column 3 is not closed before the tree that starts at line 5"),
        ("(S (NN a)))\n", 1, "')' at column 11 closes nothing"),
        ("(S (NN a)) junk\n", 1, "text 'junk' at column 12 is outside any bracket"),
        ("( (S (NP-SBJ (-NONE- *)) (VP (-NONE- *T*))) )\n", 1, "tree has no words after removing -NONE- traces"),
        ("(S\n  (NP)\n  (NN a))\n", 2, "bracket (NP at column 3 has no children"),
        ("(S (NP a (NN b)))\n", 1, "(NP at column 4 holds a word beside brackets ('a' at line 2, column 8)"),
        ("(S\n (NN a\n  b))\n", 2, "holds one of several words ('b' at line 4, column 3)"),
        ("(S ( (NN a)))\n", 1, "bracket at column 4 has no label"),
        ("(S ()) \n", 1, "bracket at column 4 has no label"),
        ("()\n", 1, "bracket ( at column 1 has no children"),
        (b"(S (NN a)\n  (NN \xff))\n", 2, "invalid UTF-8 (byte 7 of the line: b'\\xff')"),
        ("(S (NN x\u2009y))\n", 1, "token 'x\\u2009y' contains whitespace"),
    ],
)
def test_malformed_trees_name_file_and_line(tmp_path, text, line, words):
    before, after = "(S (NN Before))\n", "(S (NN After))\n"
    content = before.encode() + text + after.encode() if isinstance(text, bytes) else before + text + after
    path = write(tmp_path, "bad.tree", content)
    error = read_error(PtbHashDatasetReader(), path)
    assert (error.path, error.line) == (path, line + 1)
    assert words in error.message, error.message
    # The trees before and after are still read.
    assert [w for w, _, _ in read(PtbHashDatasetReader(skip_invalid=True), path)][0] == ["Before"]
    assert [w for w, _, _ in read(PtbHashDatasetReader(skip_invalid=True), path)][-1] == ["After"]


def test_tree_open_at_the_end_of_the_file(tmp_path):
    path = write(tmp_path, "a.tree", "(S (NN a))\n  (S (NP (NN b))\n  (NN c)\n")
    error = read_error(PtbHashDatasetReader(), path)
    assert (error.line, error.message) == (2, "unbalanced brackets: the '(' at column 3 is never closed (1 bracket(s) "
                                              "still open at the end of the file)")
    assert read(PtbHashDatasetReader(skip_invalid=True), path) == [(["a"], ["NN"], f"{path}:1")]


def test_unclosed_tree_does_not_swallow_the_next_ones(tmp_path, caplog):
    path = write(tmp_path, "a.tree", "(S (NN a)\n(S (NN b))\n(S (NN c)))\n(S (NN d))\n")
    assert [(w, s) for w, _, s in read(PtbHashDatasetReader(skip_invalid=True), path)] == [
        (["b"], f"{path}:2"), (["c"], f"{path}:3"), (["d"], f"{path}:4")]
    assert f"Skipped 2 invalid sentence(s) reading {path} (skip_invalid=True): {path}:1, {path}:3." in caplog.text


def test_whole_file_errors_crlf_bom_and_token_policy(tmp_path):
    for content in ["", "\n  \n"]:
        path = write(tmp_path, "empty.tree", content)
        assert (read_error(PtbHashDatasetReader(), path).message) == "no trees (the file is empty)"
    empty = tmp_path / "empty_dir"
    empty.mkdir()
    assert read_error(PtbHashDatasetReader(), str(empty)).message == "no files ending in '.mrg' under this directory"
    assert read_error(PtbHashDatasetReader(), str(tmp_path / "x.mrg")).message == "file does not exist"
    path = write(tmp_path, "crlf.tree", b"\xef\xbb\xbf( (S (NN a)\r\n  (VB b)) )\r\n")
    assert read(PtbHashDatasetReader(), path) == [(["a", "b"], ["NN", "VB"], f"{path}:1")]
    path = write(tmp_path, "ws.tree", "(S (NN Xpd\u200aTTD) (NN Bmp7\u2009) (SYM \u00a4\u2009))\n")
    assert read(PtbHashDatasetReader(token_policy="repair"), path)[0][0] == ["Xpd_TTD", "Bmp7", "\u00a4"]
    path = write(tmp_path, "ws2.tree", "(S (NN a) (SYM \u2009))\n")
    error = read_error(PtbHashDatasetReader(token_policy="repair"), path)
    assert error.message == "empty token tagged 'SYM' cannot be dropped"


# ------------------------------------------------------------------------------------ property-based

LABELS = st.sampled_from(["S", "NP", "NP-SBJ-1", "PP-LOC=2", "VP", "TITLE", "NML"])
TAGS = st.sampled_from(["NN", "DT", "-LRB-", "-NONE-", "``", "''", "PRP$", "-NONE-"])
WORDS = st.text(alphabet="ab-*'`$.,:;|{}", min_size=1, max_size=4)


def trees(depth: int):
    leaf = st.builds(lambda tag, word: Tree(tag, [word]), TAGS, WORDS)
    if depth == 0:
        return leaf
    return st.one_of(leaf, st.builds(Tree, LABELS, st.lists(trees(depth - 1), min_size=1, max_size=3)))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["", "TOP", "ROOT", None]), trees(4)), min_size=1, max_size=4),
       st.booleans())
def test_random_trees_round_trip(tmp_path, wrapped, multi_line):
    forest = [tree if wrapper is None else Tree(wrapper, [tree]) for wrapper, tree in wrapped]
    if multi_line:  # nltk's indented layout, as in .mrg files
        text = "\n".join(tree.pformat(margin=30) for tree in forest) + "\n"
    else:
        text = "".join(tree_to_string(tree) + "\n" for tree in forest)
    path = write(tmp_path, "r.mrg", text)
    expected = [[(w, t) for w, t in tree.pos() if t != "-NONE-"] for tree in forest]
    try:
        result = read(PtbHashDatasetReader(), path)
    except DataFormatError as error:
        assert "no words after removing -NONE- traces" in error.message
        assert not all(expected)
        return
    assert [list(zip(words, tags)) for words, tags, _ in result] == expected
    skipping = read(PtbHashDatasetReader(skip_invalid=True), path)
    assert [list(zip(words, tags)) for words, tags, _ in skipping] == [pairs for pairs in expected if pairs]
    # Cleaned trees written back read the same way.
    cleaned = [clean_tree(path, 1, tree) for tree, _ in read_trees(path)]
    again = write(tmp_path, "again.mrg", " ".join(tree_to_string(tree) for tree in cleaned))
    assert [(w, t) for w, t, _ in read(PtbHashDatasetReader(), again)] == [(w, t) for w, t, _ in result]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet="(() )\n\tSNab-", max_size=40), st.booleans())
def test_random_bracketings_read_or_raise_data_format_error(tmp_path, text, skip):
    path = write(tmp_path, "r.tree", text)
    try:
        result = read(PtbHashDatasetReader(skip_invalid=skip), path)
    except DataFormatError as error:
        assert error.path == path
        assert error.line is None or 1 <= error.line <= text.count("\n") + 1
        return
    for words, tags, source in result:
        assert words and len(words) == len(tags)
        assert "(" not in "".join(words) and ")" not in "".join(words)
