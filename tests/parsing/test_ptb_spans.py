"""The `ptb_spans` reader: hand-checked spans, metadata, errors with file:line, gold charts, CRAFT round trip,
random trees (round trip through the spans) and random bracketings (instances or `DataFormatError`)."""
import pytest
import torch
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Batch, Vocabulary
from allennlp.data.dataset_readers import DatasetReader
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nltk import Tree

from bitcode_allennlp.host.errors import DataFormatError
from bitcode_allennlp.data.dataset_readers.ptb_trees import PtbHashDatasetReader
from bitcode_allennlp.structs.trees import tree_to_string
from bitcode_allennlp.parsing.dataset_readers import PtbSpansDatasetReader, gold_chart
from bitcode_allennlp.structs.binarization import build
from tests.data.helpers import fixture, read, read_error, shared, write
from tests.data.test_ptb_trees import trees

MRG = """\
(TOP (S
    (NP-SBJ-1 (NNS Hobbits) )
    (VP (VBP like)
      (S
        (NP-SBJ (-NONE- *-1) )
        (VP (TO to)
          (VP (VB eat)
            (NP (NNS mushrooms) )))))
    (. .) ))
( (FRAG (NP (NNP Gandalf) )) )
"""


def fields(instance):
    """(words, inclusive spans, labels, metadata) of an instance."""
    metadata = instance["metadata"].metadata
    words = [token.text for token in instance["tokens"].tokens]
    spans = [(span.span_start, span.span_end) for span in instance["spans"].field_list]
    return words, spans, list(instance["span_labels"].labels), metadata


def rebuilt(instance) -> str:
    """The gold tree built back from the instance's span fields, as one line."""
    words, spans, labels, metadata = fields(instance)
    fenceposts = [(start, end + 1, label) for (start, end), label in zip(spans, labels)]
    return tree_to_string(build(words, fenceposts, metadata["pos_tags"]))


def test_hand_checked_spans_and_metadata(tmp_path):
    path = write(tmp_path, "hobbits.mrg", MRG)
    first, second = PtbSpansDatasetReader().read(path)
    words, spans, labels, metadata = fields(first)
    assert words == ["Hobbits", "like", "to", "eat", "mushrooms", "."]
    assert list(zip(spans, labels)) == [
        ((0, 5), "S"), ((0, 4), "S|<>"), ((0, 0), "NP"), ((1, 4), "VP"), ((1, 1), "VP|<>"), ((2, 4), "S+VP"),
        ((2, 2), "VP|<>"), ((3, 4), "VP"), ((3, 3), "VP|<>"), ((4, 4), "NP"), ((5, 5), "S|<>"),
    ]
    assert first["span_labels"]._label_namespace == "span_labels"
    assert metadata == {
        "words": words,
        "pos_tags": ["NNS", "VBP", "TO", "VB", "NNS", "."],
        "gold_tree": "(TOP (S (NP (NNS Hobbits)) (VP (VBP like) (S (VP (TO to) (VP (VB eat) (NP (NNS mushrooms))))))"
                     " (. .)))",
        "source": f"{path}:1",
    }
    assert rebuilt(first) == metadata["gold_tree"]
    words, spans, labels, metadata = fields(second)
    assert (words, spans, labels) == (["Gandalf"], [(0, 0)], ["FRAG+NP"])
    assert (metadata["gold_tree"], metadata["source"]) == ("(TOP (FRAG (NP (NNP Gandalf))))", f"{path}:10")


def test_tag_field_is_opt_in(tmp_path):
    """`tag_field: true` adds the gold tree's POS tags as a `tags` field (namespace `pos_tags`, for the parser's
    code-reading head); off (the default), instances have exactly the fields they had; no gold tree, no tags."""
    path = write(tmp_path, "hobbits.mrg", MRG)
    plain = list(PtbSpansDatasetReader().read(path))
    tagged = list(DatasetReader.from_params(Params({"type": "ptb_spans", "tag_field": True})).read(path))
    assert [set(i.fields) for i in plain] == [{"tokens", "spans", "span_labels", "metadata"}] * 2
    for without, with_tags in zip(plain, tagged):
        assert set(with_tags.fields) == set(without.fields) | {"tags"}
        assert fields(with_tags) == fields(without)
        assert list(with_tags["tags"].labels) == with_tags["metadata"]["pos_tags"]
        assert with_tags["tags"]._label_namespace == "pos_tags" and with_tags["tags"].sequence_field is \
            with_tags["tokens"]
    reader = PtbSpansDatasetReader(tag_field=True)
    assert "tags" not in reader.text_to_instance(["Frodo", "left"], pos_tags=["NNP", "VBD"]).fields
    vocab = Vocabulary.from_instances(tagged)
    assert set(vocab.get_token_to_index_vocabulary("pos_tags")) == {"NNS", "VBP", "TO", "VB", ".", "NNP"}


def test_fixture_trees():
    path = fixture("ptb/hand_written.mrg")
    instances = list(PtbSpansDatasetReader().read(path))
    assert len(instances) == 7
    words, spans, labels, metadata = fields(instances[1])
    assert words == "Hobbits like to eat mushrooms in the Shire .".split()
    assert list(zip(spans, labels)) == [
        ((0, 8), "S"), ((0, 7), "S|<>"), ((0, 0), "NP"), ((1, 7), "VP"), ((1, 1), "VP|<>"), ((2, 7), "S+VP"),
        ((2, 2), "VP|<>"), ((3, 7), "VP"), ((3, 4), "VP|<>"), ((3, 3), "VP|<>"), ((4, 4), "NP"), ((5, 7), "PP"),
        ((5, 5), "PP|<>"), ((6, 7), "NP"), ((6, 6), "NP|<>"), ((7, 7), "NP|<>"), ((8, 8), "S|<>"),
    ]
    assert metadata["source"] == f"{path}:21"
    for name in ["ptb/hand_written.mrg", "ptb/craft_train.tree", "ptb/craft_dev.tree"]:
        for instance in PtbSpansDatasetReader().read(fixture(name)):
            assert rebuilt(instance) == instance["metadata"]["gold_tree"]
            assert len(instance["spans"]) == 2 * len(instance["tokens"]) - 1


def test_registered_and_from_params(tmp_path):
    path = write(tmp_path, "a.mrg", MRG)
    reader = DatasetReader.from_params(Params({"type": "ptb_spans", "max_instances": 1}))
    assert isinstance(reader, PtbSpansDatasetReader)
    assert len(list(reader.read(path))) == 1
    # A directory is read as its .mrg files.
    write(tmp_path / "sub", "b.mrg", "(S (NN x))\n")
    write(tmp_path, "notes.txt", "not a tree")
    assert [fields(i)[0] for i in PtbSpansDatasetReader().read(str(tmp_path))] == [
        ["Hobbits", "like", "to", "eat", "mushrooms", "."], ["Gandalf"], ["x"]]


def test_text_to_instance_without_and_with_gold():
    reader = PtbSpansDatasetReader()
    instance = reader.text_to_instance(["Go", "home", "!"])
    assert set(instance.fields) == {"tokens", "metadata"}
    assert instance["metadata"].metadata == {"words": ["Go", "home", "!"], "pos_tags": None, "gold_tree": None,
                                             "source": None}
    instance = reader.text_to_instance(["Go", "home"], pos_tags=["VB", "RB"])
    assert instance["metadata"].metadata["pos_tags"] == ["VB", "RB"]
    tree = Tree.fromstring("(S (VP (VB Go) (ADVP (RB home))) (. !))")
    instance = reader.text_to_instance(["Go", "home", "!"], gold_tree=tree)
    assert fields(instance)[1:3] == ([(0, 2), (0, 1), (0, 0), (1, 1), (2, 2)],
                                     ["S", "VP", "VP|<>", "ADVP", "S|<>"])
    assert instance["metadata"].metadata["pos_tags"] == ["VB", "RB", "."]
    with pytest.raises(ConfigurationError, match="are not the tokens"):
        reader.text_to_instance(["Go", "away", "!"], gold_tree=tree)
    with pytest.raises(ConfigurationError, match="2 part-of-speech tags for 3 tokens"):
        reader.text_to_instance(["Go", "home", "!"], pos_tags=["VB", "RB"])


def test_vocabulary_and_gold_chart(tmp_path):
    path = write(tmp_path, "a.mrg", MRG)
    instances = list(PtbSpansDatasetReader().read(path))
    vocab = Vocabulary.from_instances(instances)
    labels = vocab.get_token_to_index_vocabulary("span_labels")
    assert set(labels) == {"S", "S|<>", "NP", "VP", "VP|<>", "S+VP", "FRAG+NP"}  # no padding or OOV token
    batch = Batch(instances)
    batch.index_instances(vocab)
    tensors = batch.as_tensor_dict()
    assert tensors["spans"].shape == (2, 11, 2) and tensors["span_labels"].shape == (2, 11)
    chart = gold_chart(tensors["spans"], tensors["span_labels"], num_tokens=6)
    assert chart.shape == (2, 7, 7) and chart.dtype == torch.long
    for b, instance in enumerate(instances):
        _, spans, span_labels, _ = fields(instance)
        expected = torch.full((7, 7), -1, dtype=torch.long)
        for (start, end), label in zip(spans, span_labels):
            expected[start, end + 1] = vocab.get_token_index(label, "span_labels")
        assert torch.equal(chart[b], expected)
    assert (chart >= 0).sum().item() == 11 + 1


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("(S (NN a)))\n", 1, "')' at column 11 closes nothing"),
        ("(S\n  (NP-SBJ (-NONE- *))\n  (VP (VB go) (X a)))\n(S (NN b)\n", 4, "is never closed"),
        ("(S\n  (NP+X (NN a))\n  (VB b))\n", 1, "phrase label 'NP+X' cannot be binarized"),
        ("(S (NN x\u2009y))\n", 1, "token 'x\\u2009y' contains whitespace"),
        ("(S (NN a) (SYM \u2009))\n", 1, "token '\\u2009' is empty and tagged 'SYM'"),
        ("( (S (NP-SBJ (-NONE- *)) (VP (-NONE- *T*))) )\n", 1, "tree has no words after removing -NONE- traces"),
        ("(S (NP) (NN a))\n", 1, "bracket (NP at column 4 has no children"),
        ("(TOP )\n", 1, "bracket (TOP at column 1 has no children"),
        ("(S (NP|<> (NN a)) (VB b))\n", 1, "phrase label 'NP|<>' cannot be binarized"),
        (b"(S (NN a)\n  (VB \xff))\n", 2, "invalid UTF-8 (byte 7 of the line: b'\\xff')"),
    ],
)
def test_errors_name_file_and_line(tmp_path, caplog, text, line, message):
    before = "(S (NN Before))\n"
    path = write(tmp_path, "bad.tree", before.encode() + text if isinstance(text, bytes) else before + text)
    error = read_error(PtbSpansDatasetReader(), path)
    assert (error.path, error.line) == (path, line + 1)
    assert message in error.message, error.message
    instances = list(PtbSpansDatasetReader(skip_invalid=True).read(path))
    assert fields(instances[0])[0] == ["Before"]
    assert f"reading {path} (skip_invalid=True): {path}:{line + 1}" in caplog.text
    assert isinstance(error, DataFormatError)


def test_token_policy_repair_changes_the_tree_too(tmp_path):
    path = write(tmp_path, "ws.tree", "(S (NP (NN Xpd\u200aTTD)) (NN Bmp7\u2009))\n")
    (instance,) = PtbSpansDatasetReader(token_policy="repair").read(path)
    metadata = instance["metadata"].metadata
    assert metadata["words"] == ["Xpd_TTD", "Bmp7"]
    assert metadata["gold_tree"] == "(TOP (S (NP (NN Xpd_TTD)) (NN Bmp7)))"
    assert rebuilt(instance) == metadata["gold_tree"]


def test_craft_dev_round_trips_through_the_instances():
    path = shared("const/craft/craft-dev.tree")
    count = 0
    for instance in PtbSpansDatasetReader(token_policy="repair").read(path):
        assert rebuilt(instance) == instance["metadata"]["gold_tree"], instance["metadata"]["source"]
        count += 1
    assert count == 2780


# ------------------------------------------------------------------------------------ property-based

@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["", "TOP", None]), trees(4)), min_size=1, max_size=4), st.booleans())
def test_random_trees_round_trip_through_the_spans(tmp_path, wrapped, multi_line):
    forest = [tree if wrapper is None else Tree(wrapper, [tree]) for wrapper, tree in wrapped]
    if multi_line:
        text = "\n".join(tree.pformat(margin=30) for tree in forest) + "\n"
    else:
        text = "".join(tree_to_string(tree) + "\n" for tree in forest)
    path = write(tmp_path, "r.mrg", text)
    try:
        instances = list(PtbSpansDatasetReader().read(path))
    except DataFormatError as error:
        assert error.path == path and "no words after removing -NONE- traces" in error.message
        return
    # The words are those of ptb_hash; the spans build the gold tree back; the gold trees read back the same.
    assert [fields(instance)[0] for instance in instances] == [words for words, _, _ in
                                                               read(PtbHashDatasetReader(), path)]
    for instance in instances:
        words, spans, _, metadata = fields(instance)
        assert len(spans) == 2 * len(words) - 1 and spans[0] == (0, len(words) - 1)
        assert rebuilt(instance) == metadata["gold_tree"]
    again = write(tmp_path, "again.mrg", "".join(fields(i)[3]["gold_tree"] + "\n" for i in instances))
    assert [fields(i)[:3] for i in PtbSpansDatasetReader().read(again)] == [fields(i)[:3] for i in instances]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet="(() )\n\tSNab-+|<>\u2009", max_size=40), st.booleans(), st.sampled_from(["strict", "repair"]))
def test_random_bracketings_give_instances_or_data_format_error(tmp_path, text, skip, policy):
    path = write(tmp_path, "r.tree", text)
    try:
        instances = list(PtbSpansDatasetReader(skip_invalid=skip, token_policy=policy).read(path))
    except DataFormatError as error:
        assert error.path == path
        assert error.line is None or 1 <= error.line <= text.count("\n") + 1
        return
    for instance in instances:
        assert rebuilt(instance) == instance["metadata"]["gold_tree"]
