"""`binary_codes` reader: codes as the only model input, gold tags or trees, and errors that name file and line."""
import json
import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from allennlp.data import Batch, Vocabulary

from bitcode_allennlp.host.errors import DataFormatError
from bitcode_allennlp.parsing.dataset_readers.ptb_spans import PtbSpansDatasetReader
from bitcode_allennlp.code_stage.binary_codes_reader import BinaryCodesDatasetReader
from tests.conftest import FIXTURES

TAGGED = {"words": ["EU", "rejects", "it"], "codes": ["a3f00c", "0b12ff", "ffffff"], "num_bits": 24,
          "tags": ["U-ORG", "O", "O"], "source": "x.conll:3"}


def write(tmp_path, *lines, name="codes.jsonl"):
    path = tmp_path / name
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def test_tagged_line(tmp_path):
    [instance] = BinaryCodesDatasetReader(num_bits=24).read(write(tmp_path, TAGGED))
    assert [t.text for t in instance["tokens"]] == TAGGED["codes"]  # the model's input: codes only
    assert instance["tags"].labels == TAGGED["tags"]
    assert instance["metadata"]["words"] == TAGGED["words"] and instance["metadata"]["source"] == "x.conll:3"


def test_tree_line_gives_the_spans_of_ptb_spans(tmp_path):
    spans_reader = PtbSpansDatasetReader()
    path = FIXTURES / "data" / "ptb" / "craft_dev.tree"
    lines = []
    expected = list(spans_reader.read(path))[:5]
    for instance in expected:
        metadata = instance["metadata"]
        lines.append({"words": metadata["words"], "codes": ["0" * 6] * len(metadata["words"]), "num_bits": 24,
                      "tree": metadata["gold_tree"], "source": metadata["source"]})
    got = list(BinaryCodesDatasetReader(num_bits=24).read(write(tmp_path, *lines)))
    for mine, theirs in zip(got, expected):
        assert [(s.span_start, s.span_end) for s in mine["spans"]] == \
               [(s.span_start, s.span_end) for s in theirs["spans"]]
        assert mine["span_labels"].labels == theirs["span_labels"].labels
        assert mine["metadata"]["gold_tree"] == theirs["metadata"]["gold_tree"]
        assert mine["metadata"]["pos_tags"] == theirs["metadata"]["pos_tags"]


@pytest.mark.parametrize("line, message", [
    ("{not json", "not JSON"),
    ("[1, 2]", "expected a JSON object"),
    ({"codes": []}, "non-empty list"),
    ({**TAGGED, "num_bits": 16}, "num_bits=24"),
    ({**TAGGED, "codes": ["a3f00c", "0b12ff", "xyzxyz"]}, "code 3: not a hex code"),
    ({**TAGGED, "codes": ["a3f00c", "0b12ff", "fff"]}, "code 3: a 24-bit code has 6 hex digits"),
    ({**TAGGED, "words": ["EU"]}, '"words" must be a list of 3'),
    ({**TAGGED, "tags": ["O"]}, '"tags" must be a list of 3'),
    ({**TAGGED, "tree": "(S (NN a))"}, "not both"),
    ({"words": ["a"], "codes": ["000000"], "tree": "(S (NN a)"}, "not a bracketed tree"),
    ({"words": ["a"], "codes": ["000000"], "tree": "(S (NN b))"}, 'words of "tree"'),
])
def test_errors_name_the_file_and_line(tmp_path, line, message):
    path = write(tmp_path, TAGGED, line)
    with pytest.raises(DataFormatError, match=message) as error:
        list(BinaryCodesDatasetReader(num_bits=24).read(path))
    assert (error.value.path, error.value.line) == (str(path), 2)


def test_empty_file_and_skip_invalid(tmp_path, caplog):
    empty = write(tmp_path, name="empty.jsonl")
    with pytest.raises(DataFormatError, match="empty codes file"):
        list(BinaryCodesDatasetReader(num_bits=24).read(empty))
    path = write(tmp_path, TAGGED, "{bad", TAGGED)
    with caplog.at_level(logging.WARNING):
        instances = list(BinaryCodesDatasetReader(num_bits=24, skip_invalid=True).read(path))
    assert len(instances) == 2
    assert "Skipped 1 invalid sentence(s)" in caplog.text and f"{path}, line 2" in caplog.text


def test_fixture_codes_index_without_a_words_vocabulary():
    reader = BinaryCodesDatasetReader(num_bits=24)
    instances = list(reader.read(FIXTURES / "data" / "codes" / "ner.train.jsonl"))
    vocab = Vocabulary.from_instances(instances)
    assert vocab.get_vocab_size("tokens") == 2  # padding and OOV only: no word, no code is in a vocabulary
    assert vocab.get_vocab_size("labels") > 1
    for instance in instances:
        reader.apply_token_indexers(instance)
    batch = Batch(instances[:4])
    batch.index_instances(vocab)
    assert set(batch.as_tensor_dict()["tokens"]["codes"]) == {"bits", "mask"}


VALUES = st.one_of(st.none(), st.integers(-2, 30), st.text(max_size=8),
                   st.lists(st.sampled_from(["a3f00c", "000000", "ffffff", "fff", "zz", "", "O", "B-PER"]),
                            max_size=4))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(
    st.dictionaries(st.sampled_from(["words", "codes", "num_bits", "tags", "tree", "source"]), VALUES, max_size=6),
    st.text(max_size=30),
), min_size=1, max_size=5))
def test_random_lines_give_round_tripping_instances_or_our_error(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("random") / "codes.jsonl"
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)).replace("\n", " ") + "\n"
                            for line in lines))
    try:
        instances = list(BinaryCodesDatasetReader(num_bits=24).read(path))
    except DataFormatError as error:
        assert error.path == str(path)
        return
    for instance in instances:  # what was read is what the line says
        codes = [t.text for t in instance["tokens"]]
        assert codes and all(len(code) == 6 for code in codes)
        assert len(instance["metadata"]["words"]) == len(codes)
        if "tags" in instance.fields:
            assert len(instance["tags"].labels) == len(codes)
