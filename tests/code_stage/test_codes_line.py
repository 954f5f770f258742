"""`common.codes_line`: the one parser and check of a codes-file line, shared by the `binary_codes` reader and the
corpus of `allennlp bits`, so that both accept and refuse the same lines with the same messages."""
import json

import pytest

from bitcode_allennlp.bits.corpus import read_codes_corpus
from bitcode_allennlp.code_stage.binary_codes_reader import BinaryCodesDatasetReader
from bitcode_allennlp.common.code_value import Codes
from bitcode_allennlp.common.codes_line import parse_codes_line, read_codes_line
from bitcode_allennlp.host.errors import DataFormatError

GOOD = {"words": ["a", "b"], "codes": ["00a3f0", "0b12ff"], "num_bits": 24, "tree": "(TOP (S (NN a) (VB b)))"}


def write(tmp_path, *records):
    path = tmp_path / "codes.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def both_errors(path):
    """The error of each reader on `path`: (path, line, message)."""
    found = []
    for read in (lambda: list(BinaryCodesDatasetReader(num_bits=24).read(path)), lambda: read_codes_corpus(str(path))):
        with pytest.raises(DataFormatError) as error:
            read()
        found.append((error.value.path, error.value.line, error.value.message))
    return found


@pytest.mark.parametrize("tree, message", [
    ("(TOP (S+VP (NN a) (VB b)))", "phrase label 'S+VP' cannot be binarized"),  # the corpus read it before (#49)
    ("(TOP (S (NN a) (VB b))", "is not a bracketed tree"),
    ("(TOP (S (NN a) (VB c)))", 'the words of "tree" are not "words"'),
])
def test_both_readers_refuse_a_bad_tree_line_alike(tmp_path, tree, message):
    path = write(tmp_path, GOOD, {**GOOD, "tree": tree})
    reader_error, corpus_error = both_errors(path)
    assert reader_error == corpus_error
    assert reader_error[:2] == (str(path), 2) and message in reader_error[2]


@pytest.mark.parametrize("change, message", [
    ({"codes": ["00a3f0", "0x12ff"]}, "code 2: not a hex code: '0x12ff'"),
    ({"codes": ["00a3f0"]}, '"words" must be a list of 1 strings'),
    ({"tags": ["O", "O"]}, 'a line has "tags" (tagging) or "tree" (parsing), not both'),
])
def test_both_readers_refuse_other_bad_lines_alike(tmp_path, change, message):
    reader_error, corpus_error = both_errors(write(tmp_path, GOOD, {**GOOD, **change}))
    assert reader_error == corpus_error and reader_error[1] == 2 and message in reader_error[2]


def test_a_good_line():
    line = parse_codes_line(json.dumps(GOOD), None)
    assert line.codes == Codes([0x00A3F0, 0x0B12FF], 24) and line.num_bits == 24
    assert line.words == ["a", "b"] and line.tags is None and line.tree.label() == "S"  # TOP removed
    assert line.gold_tags() == ["NN", "VB"] and line.has_gold and line.source is None
    tagged = parse_codes_line(json.dumps({"codes": ["ab"], "tags": ["O"]}), 8, fixed=True)
    assert tagged.words == ["ab"] and tagged.gold_tags() == ["O"] and tagged.codes.hex == ["ab"]


def test_num_bits_rules():
    with pytest.raises(ValueError, match="the reader expects num_bits=24"):
        parse_codes_line(json.dumps({**GOOD, "num_bits": 16}), 24, fixed=True)
    with pytest.raises(ValueError, match="codes of 16 bits after lines of 24 bits"):
        parse_codes_line(json.dumps({**GOOD, "num_bits": 16}), 24)
    with pytest.raises(ValueError, match='"num_bits" is missing'):
        parse_codes_line(json.dumps({"codes": ["ab"]}), None)
    with pytest.raises(DataFormatError) as error:
        read_codes_line("x.jsonl", 7, "{bad", None)
    assert str(error.value).startswith("x.jsonl, line 7: not JSON")
