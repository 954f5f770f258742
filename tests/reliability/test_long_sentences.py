"""Sentences of 2,000 words, and trees 2,000 levels deep, through every entry point (issue 14).

Where this sits: tests/reliability, beside test_long_and_odd_sentences.py (one model step on a sentence longer than
the PLM window). Here the tree code itself is checked at depth (reading, writing, binarizing, building, CKY's
back-trace, EVALB, the codes corpus reader, the predictor's JSON, the spaCy extensions: all explicit stacks, since
nltk's methods and recursive helpers raised `RecursionError` past ~450-500 levels), and then whole runs, in this
process as `allennlp` would run them (`run_in_process`): `train` with the long sentences in the dev set (the
validation pass used to kill the run before the first archive), `predict`, `evaluate`, `hash-corpus` and the
validation stage's `*_code.jsonnet` on the codes corpus, and the spaCy components.

The taggers (`pos_hash`, `ner_hash`, the latter with the frozen cached PLM) take 2,000-word sentences everywhere.
The parser's runs use 600 words (past the old limit): its tree CRF and CKY are O(n^3) in time and O(n^2) in
memory. Measured on this 2-core CPU machine with the tiny fixture parser, one thread, one sentence of n words:

    n       eval (CKY, predict / validate)     train step (two views, tree CRF + backward)
    600     0.7 s,  +131 MiB peak RSS           5.7 s,  +558 MiB
    1,000   2.6 s,  +320 MiB                   11.5 s, +1.3 GiB
    2,000   14.5 s, +1.2 GiB                   85 s,   +4.6 GiB

so 2,000 words reach the tree functions directly (and CKY's back-trace at 600 on a chart that forces a chain).
"""
import json
import os
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest
import torch
from nltk import Tree

import bitcode_allennlp.plugin  # noqa: F401
from bitcode_allennlp.data.dataset_readers.ptb_trees import PtbHashDatasetReader
from bitcode_allennlp.structs.trees import clean_tree, parse_tree, scan_trees
from bitcode_allennlp.parsing.dataset_readers import PtbSpansDatasetReader
from bitcode_allennlp.parsing.metrics.evalb import score_sentence
from bitcode_allennlp.parsing.predictors.hash_parser import json_line
from bitcode_allennlp.structs.trees import tree_to_json, tree_to_ptb
from bitcode_allennlp.structs.binarization import binarize, build, factorize
from bitcode_allennlp.structs.trees import (
    ROOT_LABEL,
    copy_tree,
    subtrees,
    tree_leaves,
    tree_pos,
    tree_to_string,
)
from bitcode_allennlp.spacy_components.extensions import install_extensions
from bitcode_allennlp.structs.trees import tree_constituents
from bitcode_allennlp.structs.tree_crf import cky
from bitcode_allennlp.code_stage.binary_codes_reader import BinaryCodesDatasetReader
from bitcode_allennlp.code_stage.experiment import run_in_process
from tests.conftest import CONFIGS, FIXTURES

LONG = 2000  # words of the taggers' sentences and of the trees checked directly
PARSE_LONG = 600  # words of the parser's runs (see the module docstring)
K = "8"  # bits of the runs' codes: the hash layer's attention is K x n x n, a third of the default 24's cost


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/reliability/conftest.py


def words_of(count: int, prefix: str = "w") -> List[str]:
    return [f"{prefix}{i % 97}" for i in range(count)]  # a few word pieces each


def flat_tree(words: List[str]) -> Tree:
    """`(S (NN w0) ... (NN wn))`: its left-binarized form is n levels deep."""
    return Tree("S", [Tree("NN", [word]) for word in words])


def deep_tree(words: List[str]) -> Tree:
    """`(S (NN w0) (S (NN w1) (S ... (NN wn))))`: n levels deep as written."""
    tree = Tree("NN", [words[-1]])
    for word in reversed(words[:-1]):
        tree = Tree("S", [Tree("NN", [word]), tree])
    return tree


def depth(tree: Tree) -> int:
    """Nodes on the longest root-to-word path (nltk's recursive `height` minus one)."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in node if isinstance(child, Tree))
    return deepest


def load_deep_json(text: str) -> Any:
    """`json.loads` of a line nested thousands deep: the stdlib decoder recurses, so only this oracle raises the
    limit (what the package writes needs no such thing)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20 * LONG))
    try:
        return json.loads(text)
    finally:
        sys.setrecursionlimit(limit)


def allennlp(*args: Any, log: Path, **env: str) -> None:
    """`allennlp ARGS` in this process (as `experiment` runs its steps), fixtures offline; fails with its log."""
    variables = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **env}
    with open(log, "w") as out:
        code = run_in_process([str(arg) for arg in args], variables, out)
    assert code == 0, f"allennlp {' '.join(map(str, args))} failed:\n{log.read_text()[-6000:]}"


def write_lines(path: Path, lines: List[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


# ---------------------------------------------------------------------------------------- the tree code directly


@pytest.mark.parametrize("shape", [flat_tree, deep_tree])
def test_tree_reading_writing_binarizing_and_building_at_2000_words(tmp_path, shape):
    words = words_of(LONG)
    tree = shape(words)
    text = tree_to_string(tree)
    assert text.startswith("(S (NN w0) ") and text.count("(NN ") == LONG
    path = write_lines(tmp_path / "long.tree", [text, "(S (NN short))"])
    raws = list(scan_trees(str(path)))
    read = clean_tree(str(path), 1, parse_tree(str(path), raws[0]))
    assert tree_to_string(read) == text and tree_to_string(copy_tree(read)) == text
    assert tree_leaves(read) == words and tree_pos(read) == [(word, "NN") for word in words]
    assert len(list(subtrees(read))) == (2 * LONG - 1 if shape is deep_tree else LONG + 1)

    binary = binarize(read)
    assert depth(binary) >= LONG  # left-binarized flat tree, or the right-branching one as it is
    spans = factorize(binary)
    assert len(spans) == 2 * LONG - 1 and spans[0][:2] == (0, LONG)
    rebuilt = build(words, spans, [tag for _, tag in tree_pos(read)])
    assert tree_to_string(rebuilt) == f"({ROOT_LABEL} {text})"

    # Both readers, end to end, and the gold tree the parser's reader keeps for EVALB.
    pos = list(PtbHashDatasetReader().read(str(path)))
    assert [len(instance["tokens"]) for instance in pos] == [LONG, 1]
    span_instances = list(PtbSpansDatasetReader().read(str(path)))
    assert len(span_instances[0]["spans"]) == 2 * LONG - 1
    assert span_instances[0]["metadata"]["gold_tree"] == f"({ROOT_LABEL} {text})"
    score = score_sentence(span_instances[0]["metadata"]["gold_tree"], tree_to_string(build(words, spans[:1])))
    assert score.status == 0 and score.gold == (LONG - 1 if shape is deep_tree else 1) and score.matched == 1

    # The codes corpus (hash-corpus output) with this tree reads back: spans, tags and the gold tree.
    codes_path = write_lines(tmp_path / "codes.jsonl", [json.dumps(
        {"words": words, "codes": ["abcdef"] * LONG, "tree": f"({ROOT_LABEL} {text})"})])
    instance = next(iter(BinaryCodesDatasetReader(num_bits=24).read(str(codes_path))))
    assert len(instance["spans"]) == 2 * LONG - 1 and instance["metadata"]["pos_tags"] == ["NN"] * LONG
    assert instance["metadata"]["gold_tree"] == f"({ROOT_LABEL} {text})"


def test_predictor_json_and_spacy_extensions_of_a_2000_level_tree():
    from spacy.tokens import Doc
    from spacy.vocab import Vocab

    words = words_of(LONG)
    words[7] = "(x)"  # escaped in the PTB string, as written in the JSON
    tree = Tree(ROOT_LABEL, [deep_tree(words)])
    ptb = tree_to_ptb(tree)
    assert "(NN -LRB-x-RRB-)" in ptb and tree_leaves(Tree.fromstring(ptb))[7] == "-LRB-x-RRB-"
    as_json = tree_to_json(tree)
    line = json_line({"words": words, "tree": ptb, "tree_json": as_json})
    decoded = load_deep_json(line)  # (`==` on nested dicts recurses too: compare what they encode to)
    assert decoded["words"] == words and decoded["tree"] == ptb and json_line(decoded) == line
    assert tree_constituents(decoded["tree_json"]) == tree_constituents(as_json)
    small = {"words": ["a"], "tree": "(TOP (NN a))", "tree_json": tree_to_json(Tree.fromstring("(TOP (NN a))")),
             "codes": ["00ff00"], "bits": [[0, 1]], "x": None, "y": 1.5, "z": True}
    assert json_line(small) == json.dumps(small)

    # benepar's API on the doc the parser component writes: constituents in preorder, the parse string.
    constituents = tree_constituents(as_json)
    assert len(constituents) == 2 * LONG - 1  # every word, and every S but the innermost
    assert constituents[0] == (0, LONG, ("S",)) and constituents[-1] == (LONG - 1, LONG, ())
    install_extensions()
    doc = Doc(Vocab(), words=words, sent_starts=[True] + [False] * (LONG - 1))
    for token in doc:
        token.tag_ = "NN"
    doc._.bitcode_constituents = {"starts": [c[0] for c in constituents], "ends": [c[1] for c in constituents],
                                  "labels": [list(c[2]) for c in constituents]}
    assert doc[:]._.parse_string == tree_to_ptb(tree[0])
    a, b, c = words[-3:]
    assert doc[LONG - 3 :]._.parse_string == f"(S (NN {a}) (S (NN {b}) (NN {c})))"
    assert len(list(doc[:]._.constituents)) == 2 * LONG - 1 and doc[LONG - 2 :]._.parent == doc[LONG - 3 :]


def test_cky_back_trace_of_a_600_level_chain():
    # Scores that make the left-branching chain (0, 1), (0, 2), ..., (0, n) the best tree: CKY's back-trace and
    # `build` walk n levels.
    n = PARSE_LONG
    scores = torch.full((1, n + 1, n + 1), -1.0)  # (batch, n+1, n+1)
    scores[0, 0, :] = 1.0
    _, (spans,) = cky(scores, torch.tensor([n]))
    assert sorted(spans, key=lambda span: (span[0], -span[1])) == spans and len(spans) == 2 * n - 1
    assert [span for span in spans if span[0] == 0] == [(0, j) for j in range(n, 0, -1)]
    tree = build(words_of(n), [(i, j, "S") for i, j in spans])
    assert depth(tree) == n + 2 and tree_leaves(tree) == words_of(n)
    assert tree_leaves(Tree.fromstring(tree_to_string(tree))) == words_of(n)


# ------------------------------------------------------------------------------------------ whole runs, in process


def ptb_file(path: Path, trees: List[Tree], fixture_lines: int = 0) -> Path:
    """One tree per line: the first `fixture_lines` of the CRAFT fixture, then `trees`."""
    lines = (FIXTURES / "data/ptb/craft_train.tree").read_text().splitlines()[:fixture_lines]
    return write_lines(path, lines + [tree_to_string(tree) for tree in trees])


def conll2012_file(path: Path, words: List[str]) -> Path:
    """One OntoNotes `*_gold_conll` sentence with a PERSON every 100 words."""
    rows = []
    for i, word in enumerate(words):
        entity = "(PERSON)" if i % 100 == 5 else "*"
        rows.append("\t".join(["d", "0", str(i), word, "NNP", "*", "-", "-", "-", "-", entity, "-"]))
    return write_lines(path, ["#begin document (d); part 000", *rows, "", "#end document"])


def read_jsonl(path: Path) -> List[Dict[str, Any]]:
    return [load_deep_json(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Each task's hashing run (train with the long sentences in dev, 1 epoch) and its codes corpus."""
    root = tmp_path_factory.mktemp("long")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the machine is shared; one thread is the fastest here
    tiny = {"EPOCHS": "1", "MAX_INSTANCES": "6", "K": K}
    done: Dict[str, Dict[str, Path]] = {}

    parse_dev = ptb_file(root / "parse_dev.tree", [deep_tree(words_of(PARSE_LONG)), flat_tree(words_of(PARSE_LONG))])
    allennlp("train", CONFIGS / "parse_hash.jsonnet", "-s", root / "parse", log=root / "parse.log",
             TRAIN_DATA=str(ptb_file(root / "parse_train.tree", [], 6)), DEV_DATA=str(parse_dev),
             HEAD_LR="1e-2", LR="1e-3", **tiny)  # high rates, so that the predicted trees have phrases
    done["parse"] = {"run": root / "parse", "dev": parse_dev}

    # POS validates on the flat and the 2,000-level tree; NER (frozen PLM) also trains on its 2,000-word sentence.
    pos_dev = ptb_file(root / "pos_dev.tree", [flat_tree(words_of(LONG)), deep_tree(words_of(LONG))])
    allennlp("train", CONFIGS / "pos_hash.jsonnet", "-s", root / "pos", log=root / "pos.log",
             TRAIN_DATA=str(ptb_file(root / "pos_train.tree", [], 6)), DEV_DATA=str(pos_dev), **tiny)
    done["pos"] = {"run": root / "pos", "dev": pos_dev}

    ner_dev = conll2012_file(root / "ner_dev.v4_gold_conll", words_of(LONG))
    allennlp("train", CONFIGS / "ner_hash.jsonnet", "-s", root / "ner", log=root / "ner.log",
             TRAIN_DATA=str(ner_dev), DEV_DATA=str(ner_dev), FREEZE_PLM="true", **tiny)
    done["ner"] = {"run": root / "ner", "dev": ner_dev}

    for task, run in done.items():
        run["codes"] = root / f"{task}_codes.jsonl"
        allennlp("hash-corpus", run["run"] / "model.tar.gz", run["dev"], "-o", run["codes"],
                 log=root / f"{task}_hash_corpus.log")
    torch.set_num_threads(threads)
    return done


@pytest.mark.parametrize("task, length", [("parse", PARSE_LONG), ("pos", LONG), ("ner", LONG)])
def test_train_validates_long_sentences_and_hash_corpus_writes_a_code_per_word(runs, task, length):
    run = runs[task]
    metrics = json.loads((run["run"] / "metrics.json").read_text())
    assert (run["run"] / "model.tar.gz").is_file() and metrics["epoch"] == 0
    assert any(key.startswith("validation_") for key in metrics)
    lines = read_jsonl(run["codes"])
    assert [len(line["codes"]) for line in lines] == [length] * len(lines)
    assert all(line["words"] == words_of(length) for line in lines)
    if task == "parse":  # the gold trees, as the reader read them: 600 levels deep, then flat
        gold = [f"({ROOT_LABEL} {tree_to_string(tree)})" for tree in (deep_tree(words_of(length)),
                                                                       flat_tree(words_of(length)))]
        assert [line["tree"] for line in lines] == gold


@pytest.mark.parametrize("task, length", [("parse", PARSE_LONG), ("pos", LONG), ("ner", LONG)])
def test_predict_and_evaluate_long_sentences(runs, tmp_path, task, length):
    run, words = runs[task], words_of(length)
    inputs = write_lines(tmp_path / "input.jsonl", [json.dumps({"tokens": words}), json.dumps({"sentence": "a b"})])
    allennlp("predict", run["run"] / "model.tar.gz", inputs, "--output-file", tmp_path / "out.jsonl", "--silent",
             log=tmp_path / "predict.log")
    long, short = read_jsonl(tmp_path / "out.jsonl")
    assert long["words"] == words and len(long["codes"]) == length and len(short["codes"]) == 2
    if task == "parse":
        assert tree_leaves(Tree.fromstring(long["tree"])) == words
        constituents = tree_constituents(long["tree_json"])  # (the spaCy component's input)
        assert constituents[0][:2] == (0, length)
        assert [c[:2] for c in constituents if c[1] - c[0] == 1] == [(i, i + 1) for i in range(length)]
    else:
        assert len(long["tags"]) == length
    if task == "ner":
        return  # the same model class as POS, evaluated there
    allennlp("evaluate", run["run"] / "model.tar.gz", run["dev"], "--output-file", tmp_path / "metrics.json",
             log=tmp_path / "evaluate.log")
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    key = {"parse": "evalb_f1", "pos": "accuracy"}[task]
    assert 0.0 <= metrics[key] <= 1.0 + 1e-9


@pytest.mark.parametrize("task, length", [("parse", PARSE_LONG), ("pos", LONG), ("ner", LONG)])
def test_validation_stage_trains_and_validates_on_long_codes(runs, tmp_path, task, length):
    codes = runs[task]["codes"]
    allennlp("train", CONFIGS / f"{task}_code.jsonnet", "-s", tmp_path / "run", log=tmp_path / "train.log",
             TRAIN_DATA=str(codes), DEV_DATA=str(codes), EPOCHS="1", K=K)
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert (tmp_path / "run" / "model.tar.gz").is_file() and metrics["training_loss"] == metrics["training_loss"]


def test_spacy_components_on_long_docs(runs):
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("bitcode_tagger", config={"archive": str(runs["pos"]["run"] / "model.tar.gz")})
    nlp.add_pipe("bitcode_parser", config={"archive": str(runs["parse"]["run"] / "model.tar.gz")})
    long = nlp(" ".join(words_of(LONG)))
    assert len(long) == LONG and all(token.tag_ and len(token._.bitcode) == int(K) // 4 for token in long)
    # The parser on a 600-word doc: benepar's API over the whole tree.
    doc = nlp(" ".join(words_of(PARSE_LONG)))
    sentence = doc[:]
    # (a root of several phrases has labels `()` and no brackets of its own, as in benepar)
    assert tree_leaves(Tree.fromstring(f"({ROOT_LABEL} {sentence._.parse_string})")) == words_of(PARSE_LONG)
    assert sentence._.parent is None and sum(1 for _ in sentence._.constituents) >= PARSE_LONG
    assert all(token._.parent is not None for token in doc)
