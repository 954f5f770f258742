"""`allennlp bits table` and `common/code_table.py`: predict output read line by line, bad lines named."""
import json

import pytest

from bitcode_allennlp.bits.command import table_from_args
from bitcode_allennlp.bits.table import read_predictions
from bitcode_allennlp.common.code_table import code_table
from bitcode_allennlp.host.errors import DataFormatError

PREDICTION = {"words": ["Obama", "visits", "New", "York"], "tags": ["U-PER", "O", "B-LOC", "L-LOC"],
              "entities": [{"label": "PER", "start": 0, "end": 1, "text": "Obama"},
                           {"label": "LOC", "start": 2, "end": 4, "text": "New York"}],
              "codes": ["a", "3", "f", "0"], "bits": [[1, 0, 1, 0], [0, 0, 1, 1], [1, 1, 1, 1], [0, 0, 0, 0]]}


def test_the_table_has_a_column_per_key_and_a_row_per_word():
    assert code_table(PREDICTION).splitlines() == [
        "word    tag    entity  code  bits",
        "Obama   U-PER  PER     a     1010",
        "visits  O              3     0011",
        "New     B-LOC  LOC     f     1111",
        "York    L-LOC  LOC     0     0000",
    ]
    tree = {"words": ["Hi"], "tree": "(TOP (UH Hi))", "codes": ["1"], "bits": [[0, 0, 0, 1]]}
    assert code_table(tree).splitlines() == ["word  code  bits", "Hi    1     0001", "(TOP (UH Hi))"]


def test_predict_output_file_and_printed_lines_read_alike(tmp_path):
    written, printed = tmp_path / "out.jsonl", tmp_path / "printed.txt"
    written.write_text(json.dumps(PREDICTION) + "\n\n" + json.dumps(PREDICTION) + "\n")
    printed.write_text(f"input 0:  {{\"sentence\": \"x\"}}\nprediction:  {json.dumps(PREDICTION)}\n")
    assert [line for line, _ in read_predictions(str(written))] == [1, 3]
    assert [p for _, p in read_predictions(str(printed))] == [PREDICTION]


@pytest.mark.parametrize("line, message", [
    ("{not json", "line 2: not a JSON prediction"),
    ("[1, 2]", "line 2: a prediction is a JSON object, got list"),
    ('{"sentence": "x"}', 'line 2: no "words" list of strings'),
    ('{"words": ["a", "b"], "codes": ["1"]}', 'line 2: "codes" must be a list of one value per word (2 words), got 1'),
    ('{"words": ["a"], "entities": [{"label": "X", "start": 0, "end": 2}]}', "line 2: an entity must have word"),
])
def test_a_bad_line_is_named(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(PREDICTION) + "\n" + line + "\n")
    with pytest.raises(DataFormatError, match=message.replace("(", r"\(").replace(")", r"\)")):
        list(read_predictions(str(path)))


def test_no_predictions_missing_file_and_bad_utf8_are_named(tmp_path, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(DataFormatError, match="empty.jsonl: no predictions"):
        table_from_args(type("Args", (), {"predictions": str(empty)}))
    with pytest.raises(DataFormatError, match="nope.jsonl: no such file"):
        list(read_predictions(str(tmp_path / "nope.jsonl")))
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b'{"words": ["\xff"]}\n')
    with pytest.raises(DataFormatError, match="line 1: invalid UTF-8"):
        list(read_predictions(str(binary)))
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps(PREDICTION) + "\n")
    assert table_from_args(type("Args", (), {"predictions": str(good)})) == code_table(PREDICTION)
    assert capsys.readouterr().out == code_table(PREDICTION) + "\n"
