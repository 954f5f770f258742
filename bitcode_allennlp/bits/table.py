"""`allennlp bits table PREDICTIONS`: the aligned word / tag / entity / code / bits table of each sentence that
`allennlp predict` wrote (its `--output-file`, or what it prints: `prediction:` lines, `input N:` lines skipped;
`-` reads standard input), as `bitcode_allennlp.load(...).encode(...).to_table()` prints it in Python.

Pure Python (the light `allennlp bits` process): a line that is not a prediction is a `DataFormatError` naming the
file, the line and what is wrong.
"""
import json
import os
import sys
from typing import Any, Dict, Iterator, List, Tuple

from bitcode_allennlp.common.code_table import code_table
from bitcode_allennlp.common.text_lines import numbered_lines
from bitcode_allennlp.host.errors import DataFormatError

PREFIX = "prediction:"
"""How `allennlp predict` starts a prediction it prints (without `--output-file`)."""
PER_WORD = ("codes", "bits", "tags")
"""Keys that hold one value per word when present."""


def _stdin_lines() -> Iterator[Tuple[int, str]]:
    for number, line in enumerate(sys.stdin, 1):
        yield number, line.rstrip("\r\n")


def _file_lines(path: str) -> Iterator[Tuple[int, str]]:
    if not os.path.isfile(path):
        why = "a directory, not a predictions file" if os.path.isdir(path) else "no such file"
        raise DataFormatError(path, None, why)
    for line in numbered_lines(path):
        if line.error is not None:
            raise line.error
        yield line.number, line.text


def check_prediction(value: Any) -> str:
    """What is wrong with one prediction (a JSON object with `words` and per-word lists of the same length), or ""."""
    if not isinstance(value, dict):
        return f"a prediction is a JSON object, got {type(value).__name__}"
    words = value.get("words")
    if not isinstance(words, list) or not all(isinstance(word, str) for word in words):
        return "no \"words\" list of strings (is this `allennlp predict` output of a bitcode_allennlp model?)"
    for key in PER_WORD:
        cells = value.get(key)
        if cells is not None and (not isinstance(cells, list) or len(cells) != len(words)):
            size = len(cells) if isinstance(cells, list) else type(cells).__name__
            return f"\"{key}\" must be a list of one value per word ({len(words)} words), got {size}"
    for entity in value.get("entities") or []:
        if not isinstance(entity, dict) or not all(isinstance(entity.get(k), int) for k in ("start", "end")) \
                or not 0 <= entity["start"] < entity["end"] <= len(words):
            return f"an entity must have word positions 0 <= start < end <= {len(words)}, got {entity!r}"
    return ""


def read_predictions(path: str) -> Iterator[Tuple[int, Dict[str, Any]]]:
    """(line number, prediction) of each prediction in `path` (`-`: standard input); raises `DataFormatError`."""
    name = "<stdin>" if path == "-" else path
    found = 0
    for number, text in _stdin_lines() if path == "-" else _file_lines(path):
        text = text.strip()
        if not text or (text.startswith("input ") and ":" in text and not text.startswith("{")):
            continue
        if text.startswith(PREFIX):
            text = text[len(PREFIX):].strip()
        try:
            value = json.loads(text)
        except ValueError as error:
            raise DataFormatError(name, number, f"not a JSON prediction ({error.msg}): {text[:60]!r}") from None
        problem = check_prediction(value)
        if problem:
            raise DataFormatError(name, number, problem)
        found += 1
        yield number, value
    if not found:
        raise DataFormatError(name, None, "no predictions (give the --output-file of `allennlp predict`, or pipe "
                              "what it prints)")


def prediction_tables(path: str) -> List[str]:
    """The table of every prediction of `path`, in order."""
    return [code_table(prediction) for _, prediction in read_predictions(path)]
