"""One line of a codes file (`allennlp hash-corpus` output), parsed and checked once, for every reader of codes files:
the validation stage's `binary_codes` reader (`bitcode_allennlp.code_stage.binary_codes_reader`) and the corpus of
``allennlp bits`` (`bitcode_allennlp.bits.corpus`, `bitcode_allennlp.bits.diff`).

One JSON object per line:

    {"words": ["EU", "rejects"], "codes": ["a3f00c", "0b12ff"], "num_bits": 24, "tags": ["U-ORG", "O"],
     "source": "train.conll:12"}

* ``"codes"`` -- a non-empty list of hex codes of K bits (`Codes.from_hex`: the strict parser of
  `bitcode_allennlp.common.code_format`);
* ``"num_bits"`` -- K; optional when the reader knows it (the reader's K, or an earlier line's);
* ``"words"`` -- one string per code (optional: the codes stand in for the words);
* the gold field, one of: ``"tags"`` (taggers: one string per code) or ``"tree"`` (parsers: the gold tree as
  one-line PTB text, under ``TOP`` or not, whose words are ``"words"`` and which `structs.trees.check_tree` accepts:
  the parser's spans and the corpus's part-of-speech tags are read from it), or neither (no gold): the gold
  fields of the registered tasks (`bitcode_allennlp.tasks`: each task's `Gold` parses and checks its field);
* ``"source"`` -- where the sentence came from (optional).

Errors are `DataFormatError` ``<file>, line <n>: <what is wrong>`` (`read_codes_line`), or the ``<what is wrong>``
alone as a `ValueError` (`check_record`, for callers that name the place themselves). nltk is imported only for a
line with a tree, so the light ``allennlp bits`` process reads tagged codes files without it.
"""
import json
from typing import TYPE_CHECKING, Any, Dict, List, NamedTuple, Optional

from bitcode_allennlp.common.code_format import check_num_bits
from bitcode_allennlp.common.code_value import Codes
from bitcode_allennlp.common.text_lines import data_format_error
from bitcode_allennlp.tasks import gold_fields

if TYPE_CHECKING:
    from nltk import Tree


class CodesLine(NamedTuple):
    """One checked line: `words`, `codes` (a `Codes` of shape (words,)), the gold `tags` or `tree` (an
    `nltk.Tree` without `TOP`; `None` when the line has none), `source` as written (or `None`) and the parsed JSON
    `record`."""

    words: List[str]
    codes: Codes
    tags: Optional[List[str]]
    tree: Optional["Tree"]
    source: Optional[str]
    record: Dict[str, Any]

    @property
    def num_bits(self) -> int:
        return self.codes.num_bits

    @property
    def has_gold(self) -> bool:
        return self.tags is not None or self.tree is not None

    def gold_tags(self) -> Optional[List[str]]:
        """The tags of a tagging line, or a parsing line's preterminal (part-of-speech) tags; `None` without gold."""
        if self.tree is None:
            return self.tags
        from bitcode_allennlp.structs.trees import tree_pos  # depth-safe (nltk's Tree.pos recurses)

        return [tag for _, tag in tree_pos(self.tree)]


def _line_bits(record: Dict[str, Any], num_bits: Optional[int], fixed: bool) -> int:
    """K of the line: its `"num_bits"`, which must be `num_bits` (the reader's K when `fixed`, else an earlier
    line's, if any)."""
    line_bits = record.get("num_bits", num_bits)
    if fixed:
        if line_bits != num_bits:
            raise ValueError(f"codes of {line_bits!r} bits, but the reader expects num_bits={num_bits} "
                             f"(set K to the hashing model's number of bits)")
        return check_num_bits(num_bits)
    if line_bits is None:
        raise ValueError('"num_bits" is missing (and no earlier line gave it)')
    if num_bits is not None and line_bits != num_bits:
        raise ValueError(f"codes of {line_bits} bits after lines of {num_bits} bits")
    return check_num_bits(line_bits)


def _strings(value: Any, count: int) -> bool:
    return isinstance(value, list) and len(value) == count and all(isinstance(item, str) for item in value)


def check_record(record: Any, num_bits: Optional[int], fixed: bool = False) -> CodesLine:
    """
    Checks one parsed JSON line (module docstring).

    # Parameters

    record : `Any`
        The line's JSON value.
    num_bits : `Optional[int]`
        K: the reader's (`fixed`), or an earlier line's (`None` for the first line).
    fixed : `bool`, optional (default = `False`)
        `num_bits` is the reader's K (a line without `"num_bits"` has it); else a line must give K unless an earlier
        one did, and all lines have the same K.

    # Raises

    `ValueError` saying what is wrong (the caller adds the file and line: `read_codes_line`).
    """
    if not isinstance(record, dict):
        raise ValueError(f"expected a JSON object, got {type(record).__name__}")
    hex_codes = record.get("codes")
    if not isinstance(hex_codes, list) or not hex_codes or not all(isinstance(c, str) for c in hex_codes):
        raise ValueError('"codes" must be a non-empty list of hex strings')
    codes = Codes.from_hex(hex_codes, _line_bits(record, num_bits, fixed))  # (words,); HexCodeError: "code 3: ..."
    words = record.get("words", hex_codes)
    if not _strings(words, len(hex_codes)):
        raise ValueError(f'"words" must be a list of {len(hex_codes)} strings, one per code')
    golds = gold_fields()  # the registered tasks' gold fields (`bitcode_allennlp.tasks`)
    if sum(gold.key in record for gold in golds) > 1:
        raise ValueError(f"a line has {' or '.join(f'{chr(34)}{gold.key}{chr(34)} ({gold.what})' for gold in golds)}"
                         ", not both")
    found: Dict[str, Any] = {"tags": None, "tree": None}
    for gold in golds:
        if gold.key in record:
            found[gold.attribute] = gold.check(record[gold.key], words)
    return CodesLine(words=words, codes=codes, source=record.get("source"), record=record, **found)


def parse_codes_line(text: str, num_bits: Optional[int], fixed: bool = False) -> CodesLine:
    """One line's text -> `CodesLine` (`check_record`); `ValueError` ``not JSON (...)`` or what `check_record`
    says."""
    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"not JSON ({error.msg} at column {error.colno})") from None
    return check_record(record, num_bits, fixed)


def read_codes_line(path: str, number: int, text: str, num_bits: Optional[int], fixed: bool = False) -> CodesLine:
    """
    Line `number` (1-based) of the codes file `path`, parsed and checked (`parse_codes_line`).

    # Raises

    `DataFormatError` ``<path>, line <number>: <what is wrong>``.
    """
    try:
        return parse_codes_line(text, num_bits, fixed)
    except ValueError as error:
        raise data_format_error(path, number, str(error)) from None
