"""`bits.diff`: exactly the differing bits are marked, in text, ANSI and HTML; alignment; codes from an archive."""
import json
import re

import pytest
import torch
from allennlp.common import Params
from allennlp.data import DatasetReader, Vocabulary
from allennlp.models import Model
from allennlp.models.archival import archive_model

import bitcode_allennlp.plugin  # noqa: F401
from bitcode_allennlp.bits.diff import (
    BLUE, RED, RESET, align, codes_from_archive, codes_from_corpus, diff_codes, render_html, render_text,
)
from bitcode_allennlp.host.errors import DataFormatError
from tests.conftest import CONFIGS, ROOT




def test_differing_bits_are_exactly_those_that_differ():
    # 10 bits: 3 hex digits, the first holds 2 bits.  a = 10 1100 0011, b = 01 1100 1010
    diff = diff_codes(["x"], ["2c3"], ["y"], ["1ca"], 10, pair=(0, 0))
    assert diff.pairs[0].differing == [0, 1, 6, 9]
    text = render_text(diff).splitlines()
    a_line, b_line, marks = text[4], text[5], text[6]
    bits_start = a_line.index("10 1100 0011")
    assert b_line[bits_start:].startswith("01 1100 1010  4 bits differ: 0 1 6 9")
    assert marks[bits_start:] == "^^      ^  ^"
    coloured = render_text(diff, color=True)
    # the 4 bits, and the hex digits 0 and 2 that hold them
    assert coloured.count(RED) == 4 + 2 and coloured.count(BLUE) == 4 + 2
    assert f"{RED}1{RESET}{RED}0{RESET} 1100 {RED}0{RESET}01{RED}1{RESET}" in coloured
    assert "\x1b" not in render_text(diff)
    page = render_html(diff)
    assert re.findall(r'<span class="a" title="bit (\d+)">', page) == ["0", "1", "6", "9"]
    assert re.findall(r'<span class="b" title="bit (\d+)">(\d)', page) == [("0", "0"), ("1", "1"), ("6", "1"),
                                                                              ("9", "0")]


def test_alignment_pairs_equal_words_and_replacements():
    a = "Lucas brought the groceries for him".split()
    b = "Lucas brought the groceries for himself today".split()
    assert align(a, b) == [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (None, 6)]
    assert align(["x", "a"], ["a"]) == [(0, None), (1, 0)]
    codes_a = ["000", "fff", "0f0", "123", "abc", "800"]
    codes_b = ["000", "ffe", "0f0", "123", "abc", "801", "777"]
    diff = diff_codes(a, codes_a, b, codes_b, 12)
    assert [p.differing for p in diff.pairs] == [[], [11], [], [], [], [11], []]
    text = render_text(diff)
    assert "himself" in text and "(no counterpart in A)" in text
    assert text.endswith("6 aligned pairs, 4 with identical codes, 2 differing bits (mean Hamming distance 0.33)")


def test_codes_from_corpus_lines(ner_codes):
    num_bits, (a, b) = codes_from_corpus(str(ner_codes), [2, 1])
    assert num_bits == 4 and a["words"] == ["Peter", "Smith"] and b["tags"] == ["U-ORG", "O", "U-MISC", "O"]
    with pytest.raises(ValueError, match="no line 9"):
        codes_from_corpus(str(ner_codes), [1, 9])


def bad_utf8_codes(tmp_path):
    """Line 1 good; line 2 with a byte that is not UTF-8 in a word; line 3 good; CR LF line ends (read as LF)."""
    good = json.dumps({"words": ["a", "b"], "codes": ["1", "2"], "num_bits": 4}).encode()
    path = tmp_path / "bad.jsonl"
    path.write_bytes(good + b"\r\n" + b'{"words": ["caf\xe9"], "codes": ["3"], "num_bits": 4}\r\n' + good + b"\r\n")
    return path


def test_codes_from_corpus_names_the_file_and_line_of_invalid_utf8(tmp_path):
    path = bad_utf8_codes(tmp_path)
    with pytest.raises(DataFormatError) as caught:
        codes_from_corpus(str(path), [1, 2])
    assert (caught.value.path, caught.value.line) == (str(path), 2)
    assert str(caught.value) == f"{path}, line 2: invalid UTF-8 (byte 16 of the line: b'\\xe9')"
    num_bits, (a, b) = codes_from_corpus(str(path), [3, 1])  # a bad line that is not asked for is not read
    assert num_bits == 4 and a["words"] == b["words"] == ["a", "b"] and a["name"] == "line 3"


def test_codes_from_corpus_names_the_file_and_line_of_a_bad_record(tmp_path):
    path = tmp_path / "codes.jsonl"
    path.write_text('{"words": ["a"], "codes": ["1"], "num_bits": 4}\n{"codes": ["zz"], "num_bits": 4}\n')
    with pytest.raises(ValueError, match=f"^{re.escape(str(path))}, line 2: "):
        codes_from_corpus(str(path), [1, 2])


def test_bits_diff_of_invalid_utf8_is_one_line_naming_file_and_line(tmp_path):
    import subprocess
    import sys

    path = bad_utf8_codes(tmp_path)
    result = subprocess.run([sys.executable, "-m", "allennlp", "bits", "diff", "--codes", str(path), "--lines", "1",
                             "2"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [
        f"allennlp bits diff: error: {path}, line 2: invalid UTF-8 (byte 16 of the line: b'\\xe9')",
        "(set BITCODE_DEBUG=1 for the full traceback)"]


@pytest.fixture(scope="module")
def ner_archive(tmp_path_factory):
    """An untrained fixture NER hashing model (tiny-bert) archived as `allennlp train` would: seconds, no training."""
    directory = tmp_path_factory.mktemp("ner_archive")
    params = Params.from_file(str(CONFIGS / "ner_hash.jsonnet"))
    params.to_file(str(directory / "config.json"))
    reader = DatasetReader.from_params(params.pop("dataset_reader"))
    vocab = Vocabulary.from_instances(reader.read(params.pop("train_data_path")))
    vocab.save_to_files(str(directory / "vocabulary"))
    model = Model.from_params(vocab=vocab, params=params.pop("model"))
    torch.save(model.state_dict(), directory / "best.th")
    archive_model(str(directory))
    return directory / "model.tar.gz"


def test_codes_from_archive_are_the_predictors(ner_archive):
    num_bits, (a, b) = codes_from_archive(str(ner_archive), ["Frodo left the Shire .", "Sam left the Shire ."])
    assert num_bits == 24 and a["words"] == ["Frodo", "left", "the", "Shire", "."]
    assert len(a["codes"]) == 5 and all(len(code) == 6 for code in a["codes"]) and len(a["tags"]) == 5
    diff = diff_codes(a["words"], a["codes"], b["words"], b["codes"], num_bits)
    first = diff.pairs[0]
    expected = [i for i in range(24) if (int(a["codes"][0], 16) ^ int(b["codes"][0], 16)) >> (23 - i) & 1]
    assert (first.index_a, first.index_b, first.differing) == (0, 0, expected)
    _, (again, _) = codes_from_archive(str(ner_archive), ["Frodo left the Shire .", "x"], whitespace=True)
    assert again["codes"] == a["codes"]  # eval mode: the same codes every time
