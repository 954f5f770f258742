"""A codes corpus (`allennlp hash-corpus` output) as flat numpy arrays, one entry per word, and the labels each word
is read under.

Each line is parsed and checked by `bitcode_allennlp.common.codes_line` (the same check as the `binary_codes`
reader's, gold trees included). Codes are packed into `numpy.uint64` in the format of
`bitcode_allennlp.common.code_format` (bit i = head i, head 0 the most significant bit, hex = `ceil(K / 4)` digits);
`CodesCorpus.code_value` is the corpus's codes as a `Codes` value (hex, bits, signs), and K is at most `MAX_BITS`
(63), as everywhere else.

Label views of a word (`label_views`):

* `tag` -- the word's tag as written: `"tags"` of a tagging line, or for a parsing line (`"tree"`) the
  preterminal (POS) tag of the word.
* `prefix` and `type` -- only when every tag of the corpus is `O` or `<P>-<TYPE>` with P one of B I E S L U
  (BIOES / BIOUL / BIO NER tags, with at least one such tag): `prefix` is P (`O` for `O`), `type` is TYPE (`O` for
  `O`). The letters are kept as the corpus writes them: BIOUL's U and L are BIOES's S and E.
"""
import re
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from bitcode_allennlp.common.code_format import MAX_BITS
from bitcode_allennlp.common.code_value import Codes
from bitcode_allennlp.common.codes_line import read_codes_line
from bitcode_allennlp.common.text_lines import numbered_lines
from bitcode_allennlp.host.errors import DataFormatError

MAX_INDEX_BITS = MAX_BITS
"""The one K limit of `bitcode_allennlp.common.code_format` (63); the name is kept for callers."""

BIO_TAG = re.compile(r"^([BIESLU])-(.+)$")
OUTSIDE = "O"
PREFIX_ORDER = ("B", "I", "E", "L", "S", "U", "O")
"""Order of BIOES / BIOUL prefixes in tables and pictures (the paper's Figure 4 order, BIOUL letters beside)."""


def is_bio_tagset(tags: Sequence[str]) -> bool:
    """True when every tag is `O` or `<P>-<TYPE>` with P in B I E S L U, and at least one is not `O`."""
    seen_entity = False
    for tag in set(tags):
        if tag == OUTSIDE:
            continue
        if BIO_TAG.match(tag) is None:
            return False
        seen_entity = True
    return seen_entity


def label_views(tags: Sequence[str]) -> Dict[str, List[str]]:
    """`{"tag": tags}`, plus `"prefix"` and `"type"` for a BIO-style NER tag set (see the module docstring)."""
    views = {"tag": list(tags)}
    if is_bio_tagset(tags):
        views["prefix"] = [OUTSIDE if tag == OUTSIDE else tag[0] for tag in tags]
        views["type"] = [OUTSIDE if tag == OUTSIDE else tag[2:] for tag in tags]
    return views


def distinct_strings(strings: Sequence[str]) -> Tuple[List[str], np.ndarray]:
    """
    The distinct strings of `strings`, sorted (by code point), and the id of each string into them: `(names,
    ids)`, `ids` (n,) int64.

    What `np.unique(..., return_inverse=True)` gives, but on the strings as they are: numpy's fixed-width unicode
    dtype (``astype(str)``) pads with NULs and so drops a string's trailing NULs, which would merge the words
    ``"Paris\\x00"`` and ``"Paris"`` (and count them as one vocabulary entry).
    """
    names = sorted(set(strings))
    index = {name: i for i, name in enumerate(names)}
    ids = np.fromiter((index[string] for string in strings), dtype=np.int64, count=len(strings))  # (n,)
    return names, ids


class LabelColumn(NamedTuple):
    """One label view of every entry: `ids` (n,) int32 into `names` (sorted label strings, kept exactly:
    `distinct_strings`)."""

    ids: np.ndarray
    names: List[str]

    @classmethod
    def from_strings(cls, labels: Sequence[str]) -> "LabelColumn":
        names, ids = distinct_strings([str(label) for label in labels])  # (L,), (n,)
        return cls(ids.astype(np.int32), names)

    def strings(self, indices: Any) -> List[str]:
        return [self.names[i] for i in np.asarray(self.ids[np.asarray(indices, dtype=np.int64)]).tolist()]


class CodesCorpus(NamedTuple):
    """
    A codes corpus, flattened to one entry per word in corpus order.

    `codes` (n,) uint64; `sentence_ids` (n,) int32, the 0-based sentence (non-empty line) of each entry;
    `positions` (n,) int32, the word's 0-based position in it; `sentences` the lines' `words`, `source` and
    1-based file `line`; `labels` one `LabelColumn` per label view (empty when the corpus has no gold labels).
    """

    path: str
    num_bits: int
    codes: np.ndarray
    sentence_ids: np.ndarray
    positions: np.ndarray
    sentences: List[Dict[str, Any]]
    labels: Dict[str, LabelColumn]

    def __len__(self) -> int:
        return int(self.codes.shape[0])

    @property
    def code_value(self) -> Codes:
        """The codes as a `Codes` value, shape (n,) (no copy)."""
        return Codes(self.codes, self.num_bits)

    def word(self, index: int) -> str:
        return self.sentences[int(self.sentence_ids[index])]["words"][int(self.positions[index])]


def read_codes_corpus(path: str, max_sentences: Optional[int] = None, keep_records: bool = False) -> CodesCorpus:
    """
    Reads a codes corpus into a `CodesCorpus`.

    # Parameters

    path : `str`
        JSON lines as `allennlp hash-corpus` writes them, UTF-8 (a byte-order mark and CR LF line ends are read),
        lines split on LF only (`numbered_lines`, so line numbers agree with `grep -n`); blank lines are skipped.
    max_sentences : `int`, optional (default = `None`)
        Read at most this many sentences.
    keep_records : `bool`, optional (default = `False`)
        Keep each line's parsed JSON object as its sentence's `"record"` (the explorer shows tags, trees, sources).

    # Raises

    `DataFormatError` (path, 1-based line, what is wrong) for a malformed line (invalid UTF-8 among them: ``invalid
    UTF-8 (byte N of the line: ...)``), an empty file, or a file in which some lines have gold labels and others not.
    """
    num_bits: Optional[int] = None
    codes: List[Codes] = []
    sentences: List[Dict[str, Any]] = []
    tags: List[str] = []
    labelled: Optional[bool] = None
    for number, text, decode_error in numbered_lines(path):  # bytes, decoded per line: bad UTF-8 names its line
        if decode_error is None and not text.strip():
            continue
        if max_sentences is not None and len(sentences) >= max_sentences:
            break
        if decode_error is not None:
            raise decode_error  # DataFormatError(path, line, "invalid UTF-8 (byte N of the line: ...)")
        line = read_codes_line(path, number, text, num_bits)  # DataFormatError(path, line, what is wrong)
        if labelled is None:
            labelled = line.has_gold
        elif labelled != line.has_gold:
            raise DataFormatError(path, number, "some lines have gold tags or trees and others not")
        num_bits = line.num_bits
        codes.append(line.codes)
        if line.has_gold:
            tags.extend(line.gold_tags())  # type: ignore[arg-type]
        sentences.append({"words": line.words, "source": line.source or f"{path}:{number}",
                          "line": number, **({"record": line.record} if keep_records else {})})
    if not sentences:
        raise DataFormatError(path, None, "empty codes file (expected one JSON object per line)")
    lengths = np.array([len(sentence["words"]) for sentence in sentences], dtype=np.int64)  # (sentences,)
    sentence_ids = np.repeat(np.arange(len(sentences), dtype=np.int32), lengths)  # (n,)
    starts = np.cumsum(lengths) - lengths  # (sentences,)
    positions = (np.arange(int(lengths.sum())) - np.repeat(starts, lengths)).astype(np.int32)  # (n,)
    labels = {view: LabelColumn.from_strings(values) for view, values in label_views(tags).items()} if tags else {}
    packed = np.concatenate([line_codes.packed for line_codes in codes])  # (n,) uint64, writable
    return CodesCorpus(path=str(path), num_bits=int(num_bits), codes=packed,  # type: ignore[arg-type]
                       sentence_ids=sentence_ids, positions=positions, sentences=sentences, labels=labels)
