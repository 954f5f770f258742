"""The pure-Python EVALB: equal to the real program (per sentence and summaries) on edited fixture and CRAFT trees."""
import random

import pytest
from allennlp.common import Params
from allennlp.training.metrics import Metric
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nltk import Tree

from bitcode_allennlp.data.dataset_readers.ptb_trees import read_trees
from bitcode_allennlp.structs.trees import clean_tree, tree_to_string
from bitcode_allennlp.parsing.metrics.evalb import (
    COLLINS,
    EvalbF1,
    EvalbParameters,
    evalb_score,
    read_parameters,
    score_sentence,
    summarize,
)
from bitcode_allennlp.structs.binarization import build
from tests.data.helpers import fixture, shared
from tests.parsing.helpers import (
    COLLINS_PRM,
    EVALB_SOURCE,
    normalized_evalb_summary,
    perturb,
    printed_summary,
    run_evalb,
    within_evalb_limits,
)
from tests.training.distributed import run_distributed


def rows(scores):
    """The per-sentence table as EVALB prints it."""
    printed = []
    for number, score in enumerate(scores, 1):
        recall = 100.0 * score.matched / score.gold if score.gold else 0.0
        precision = 100.0 * score.matched / score.test if score.test else 0.0
        accuracy = 100.0 * score.correct_tags / score.words if score.words else 0.0
        printed.append((str(number), str(score.length), str(score.status), f"{recall:.2f}", f"{precision:.2f}",
                        str(score.matched), str(score.gold), str(score.test), str(score.crossing),
                        str(score.words), str(score.correct_tags), f"{accuracy:.2f}"))
    return printed


def assert_same_as_evalb(program, tmp_path, gold, test, parameters_file=COLLINS_PRM):
    """Per-sentence rows and both summaries of the real EVALB equal ours; returns our "All" summary."""
    parameters = read_parameters(str(parameters_file))
    output = run_evalb(program, gold, test, tmp_path, parameters_file)
    scores = [score_sentence(g, t, parameters) for g, t in zip(gold, test)]
    assert len(output.rows) == len(gold)
    for ours, theirs, g, t in zip(rows(scores), output.rows, gold, test):
        assert ours == theirs, f"gold {g}\ntest {t}"
    assert printed_summary(summarize(scores)) == normalized_evalb_summary(output.summaries["All"])
    cutoff = f"len<={parameters.cutoff_length}"
    assert printed_summary(summarize(scores, parameters.cutoff_length)) == normalized_evalb_summary(
        output.summaries[cutoff])
    assert evalb_score(gold, test, parameters) == summarize(scores)
    return summarize(scores)


def edited(path, seed, raw_gold=0.3, errors=0.0, limit=None):
    """(gold, predicted) one-line trees: gold cleaned under TOP (or as written), predicted a random edit of it."""
    rng = random.Random(seed)
    gold, test = [], []
    for number, (tree, _) in enumerate(read_trees(path)):
        if limit is not None and number >= limit:
            break
        cleaned = Tree("TOP", [clean_tree(str(path), 0, tree)])
        gold_line = tree_to_string(tree) if rng.random() < raw_gold else tree_to_string(cleaned)
        test_line = tree_to_string(perturb(cleaned, rng, errors=errors))
        if within_evalb_limits(gold_line, test_line):
            gold.append(gold_line)
            test.append(test_line)
    return gold, test


# ------------------------------------------------------------------------------------ without the program

def test_collins_prm_and_sample_prm_are_read_as_evalb_reads_them():
    assert read_parameters(str(COLLINS_PRM)) == COLLINS
    assert read_parameters(str(EVALB_SOURCE / "sample" / "sample.prm")) == EvalbParameters(
        delete_labels=("TOP", "-NONE-", ",", ":", "``", "''"), delete_labels_for_length=("-NONE-",),
        equal_labels=(("T", "TT"),), equal_words=(("This", "this"),))
    with pytest.raises(ValueError, match="QUOTE_LABEL is not supported"):
        read_parameters(str(EVALB_SOURCE / "new.prm"))


@pytest.mark.parametrize(
    "gold, test, expected",
    [
        # length, status, matched, gold, test, crossing, words, correct tags
        ("(TOP (S (NP (DT a) (NN b)) (VP (VB c)) (. .)))", "(TOP (S (NP (DT a) (NN b)) (VP (VB c)) (. .)))",
         (4, 0, 3, 3, 3, 0, 3, 3)),
        # Punctuation (deleted with its word) can move; a bracket left empty goes.
        ("(TOP (S (NP (DT a) (NN b)) (VP (VB c)) (. .)))", "(TOP (S (NP (DT a) (NN b)) (VP (VB c) (X (. .)))))",
         (4, 0, 3, 3, 3, 0, 3, 3)),
        # ADVP = PRT; function tags are cut; "?" is not deleted by COLLINS.prm.
        ("(TOP (S (ADVP-TMP (RB up)) (? ?)))", "(TOP (S=2 (PRT (RB up)) (? ?)))", (2, 0, 2, 2, 2, 0, 2, 2)),
        # Duplicated brackets count twice; a wrong tag costs tagging accuracy only.
        ("(TOP (NP (NP (NN a)) (NN b)))", "(TOP (NP (NP (NP (JJ a))) (NN b)))", (2, 0, 2, 2, 3, 0, 2, 1)),
        # An unlabelled root is a bracket; TOP is not. Crossing brackets.
        ("( (S (A (X a) (X b)) (X c)))", "(TOP (S (X a) (B (X b) (X c))))", (3, 0, 1, 3, 2, 1, 3, 3)),
        # -NONE- words do not count for the length; only punctuation: skipped; different words: error.
        ("(TOP (S (NP (-NONE- *)) (. .)))", "(TOP (S (. .)))", (1, 2, 0, 0, 0, 0, 0, 0)),
        ("(TOP (S (NN a) (NN b)))", "(TOP (S (NN a) (NN c)))", (2, 1, 0, 0, 0, 0, 0, 0)),
        ("(TOP (S (NN a) (NN b)))", "(TOP (S (NN a) (. b)))", (2, 1, 0, 0, 0, 0, 0, 0)),
    ],
)
def test_hand_made_sentences(gold, test, expected):
    assert tuple(score_sentence(gold, test)[:8]) == expected
    assert tuple(score_sentence(Tree.fromstring(gold), Tree.fromstring(test))[:8]) == expected


def test_summary_and_errors():
    gold = ["(TOP (S (NP (NN a)) (VP (VB b))))", "(TOP (S (NN c) (NN d)))", "(TOP (. .))", "(TOP (X (NN e)))"]
    test = ["(TOP (S (NP (NN a)) (VP (VB b))))", "(TOP (S (NP (NN c) (NN d))))", "(TOP (. .))", "(TOP (X (NN f)))"]
    summary = evalb_score(gold, test)
    assert {key: summary[key] for key in ("sentences", "error_sentences", "skipped_sentences", "valid_sentences",
                                          "matched_brackets", "gold_brackets", "test_brackets",
                                          "complete_matches")} == {
        "sentences": 4, "error_sentences": 1, "skipped_sentences": 1, "valid_sentences": 2, "matched_brackets": 4,
        "gold_brackets": 4, "test_brackets": 5, "complete_matches": 1}
    assert (summary["recall"], summary["precision"], summary["exact"]) == (100.0, 80.0, 50.0)
    assert summary["f1"] == pytest.approx(2 * 80 * 100 / 180)
    assert evalb_score(["(TOP (NN a))"], ["(TOP (NN a))"])["f1"] == 0.0  # EVALB prints nan
    with pytest.raises(ValueError, match="2 gold trees but 1 predicted trees"):
        evalb_score(gold[:2], test[:1])
    for bad in ["(S (NN a)", "(S (NN a)))", "(S (NN a b))", "(S a (NN b))"]:
        with pytest.raises(ValueError):
            score_sentence(bad, bad)


# ------------------------------------------------------------------------------------ against the program

def test_evalb_sample_files(evalb_program, tmp_path):
    sample = EVALB_SOURCE / "sample"
    gold = (sample / "sample.gld").read_text().splitlines()
    test = (sample / "sample.tst").read_text().splitlines()
    summary = assert_same_as_evalb(evalb_program, tmp_path, gold, test, sample / "sample.prm")
    assert f"{summary['f1']:.2f}" == "89.12"  # as in sample.rsl


@pytest.mark.parametrize("name", ["ptb/hand_written.mrg", "ptb/craft_train.tree", "ptb/craft_dev.tree"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_edited_fixture_trees(evalb_program, tmp_path, name, seed):
    gold, test = edited(fixture(name), seed, errors=0.05)
    assert_same_as_evalb(evalb_program, tmp_path, gold, test)
    # Each tree against itself: 100.
    summary = assert_same_as_evalb(evalb_program, tmp_path, gold, gold)
    assert summary["f1"] == summary["exact"] == 100.0


def test_edited_craft_dev_trees(evalb_program, tmp_path):
    gold, test = edited(shared("const/craft/craft-dev.tree"), seed=13, errors=0.02, limit=300)
    assert len(gold) == 300
    summary = assert_same_as_evalb(evalb_program, tmp_path, gold, test)
    assert summary["error_sentences"] > 0 and 80.0 < summary["f1"] < 100.0


SPAN_LABELS = ["S", "NP", "VP", "PP", "ADVP", "PRT", "S+VP", "NP+NP", "S|<>", "NP|<>", "VP|<>", "TOP|<>"]


def random_bracketing(start, end, rng):
    """A random full binary bracketing of words start..end with random span labels, as the parser predicts."""
    spans = [(start, end, rng.choice(SPAN_LABELS))]
    if end - start > 1:
        split = rng.randrange(start + 1, end)
        spans += random_bracketing(start, split, rng) + random_bracketing(split, end, rng)
    return spans


def test_random_predictions_built_from_spans(evalb_program, tmp_path):
    rng = random.Random(3)
    gold, test = [], []
    for name in ["ptb/craft_dev.tree", "ptb/hand_written.mrg"]:
        for tree, _ in read_trees(fixture(name)):
            cleaned = clean_tree(name, 0, tree)
            words, tags = zip(*cleaned.pos())
            gold.append(tree_to_string(Tree("TOP", [cleaned])))
            test.append(tree_to_string(build(words, random_bracketing(0, len(words), rng), tags)))
    summary = assert_same_as_evalb(evalb_program, tmp_path, gold, test)
    assert summary["valid_sentences"] == len(gold) and 0 < summary["f1"] < 50


PHRASES = st.sampled_from(["S", "NP", "VP", "ADVP", "PRT", "NP-SBJ", "S=1", "TOP", "-NONE-", ",", "X"])
TAGS = st.sampled_from(["NN", "DT", ",", ".", ":", "``", "''", "-NONE-", "?", "TOP", "ADVP"])


def trees(depth: int):
    leaf = st.builds(lambda tag, word: Tree(tag, [word]), TAGS, st.sampled_from(["a", "b", "*", "."]))
    if depth == 0:
        return leaf
    return st.one_of(leaf, st.builds(Tree, PHRASES, st.lists(trees(depth - 1), min_size=1, max_size=3)))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(trees(4), st.integers(0, 2 ** 16)), min_size=1, max_size=20))
def test_random_trees(evalb_program, tmp_path, pairs):
    gold, test = [], []
    for tree, seed in pairs:
        gold.append(tree_to_string(tree))
        test.append(tree_to_string(perturb(tree, random.Random(seed), errors=0.1)))
    assert_same_as_evalb(evalb_program, tmp_path, gold, test)


# ------------------------------------------------------------------------------------ the metric

def test_metric_accumulates_like_evalb():
    gold, test = edited(fixture("ptb/craft_dev.tree"), seed=5)
    metric = Metric.from_params(Params({"type": "evalb_f1"}))
    assert isinstance(metric, EvalbF1)
    metric(test[:10], gold[:10])
    metric([Tree.fromstring(line) for line in test[10:]], [Tree.fromstring(line) for line in gold[10:]])
    summary = evalb_score(gold, test)
    expected = {"evalb_recall": summary["recall"] / 100, "evalb_precision": summary["precision"] / 100,
                "evalb_f1": summary["f1"] / 100, "evalb_exact": summary["exact"] / 100}
    assert metric.get_metric() == pytest.approx(expected)
    assert metric.get_metric(reset=True) == pytest.approx(expected)
    assert metric.get_metric() == {"evalb_recall": 0.0, "evalb_precision": 0.0, "evalb_f1": 0.0, "evalb_exact": 0.0}
    with pytest.raises(ValueError, match=r"Words unmatch \(b\|c\)"):
        metric(["(TOP (S (NN a) (NN c)))"], ["(TOP (S (NN a) (NN b)))"])
    metric(["(TOP (. .))"], ["(TOP (. .))"])  # skipped, as EVALB does
    assert metric.get_metric()["evalb_exact"] == 0.0


def test_metric_reads_a_parameter_file(tmp_path):
    prm = tmp_path / "unlabeled.prm"
    prm.write_text(COLLINS_PRM.read_text().replace("LABELED 1", "LABELED 0"))
    metric = EvalbF1(str(prm))
    metric(["(TOP (S (X a) (Y b)))"], ["(TOP (S (NP a) (VP b)))"])
    assert metric.get_metric()["evalb_f1"] == 1.0


def distributed_evalb(rank, world_size):
    gold, test = edited(fixture("ptb/craft_train.tree"), seed=7)
    metric = EvalbF1()
    metric(test[rank::world_size], gold[rank::world_size])
    return metric.get_metric()


def test_two_process_gloo_equals_single_process_on_union():
    gold, test = edited(fixture("ptb/craft_train.tree"), seed=7)
    single = EvalbF1()
    single(test, gold)
    for result in run_distributed(distributed_evalb, 2):
        assert result == pytest.approx(single.get_metric())
