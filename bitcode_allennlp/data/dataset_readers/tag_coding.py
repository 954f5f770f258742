"""Span-based conversion between named-entity tag schemes: IOB1, IOB2 (= BIO) and BIOUL (= BIOES, written with
E-/S- for L-/U-).

Where this sits: the NER readers (`conll_columns`, `ontonotes_hash`) decode the tags of a sentence into spans with
`tags_to_spans` and encode them for the model with `spans_to_tags`. Unlike
`allennlp.data.dataset_readers.dataset_utils.span_utils`, a malformed sequence raises `TagSequenceError` naming the
offending token, so that readers can report the file and line. Tags and types in messages are quoted with `repr`,
so that invisible whitespace shows (`'I-PER ' does not continue a 'PER ' span`).
"""
import re
from typing import List, Optional, Sequence, Tuple

# (label, start, end), token indices, end inclusive, as in allennlp's span_utils.
Span = Tuple[str, int, int]

INPUT_SCHEMES = ("IOB2", "BIO", "IOB1", "BIOUL", "BIOES")  # "BIO" is AllenNLP's name for IOB2
OUTPUT_SCHEMES = ("BIOUL", "BIO")

_PREFIXES = {"IOB2": "BI", "BIO": "BI", "IOB1": "BI", "BIOUL": "BILU", "BIOES": "BIES"}
_LAST_UNIT = {"BIOUL": ("L", "U"), "BIOES": ("E", "S")}  # schemes that mark a span's last token and 1-token spans
_TAG = re.compile(r"([A-Z])-(.+)", re.DOTALL)


class TagSequenceError(ValueError):
    """A malformed tag sequence; `index` is the 0-based position of the offending tag."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index
        self.message = message


def _split(tag: str, scheme: str, index: int) -> Tuple[Optional[str], Optional[str]]:
    if tag == "O":
        return None, None
    match = _TAG.fullmatch(tag)
    if match is None or match.group(1) not in _PREFIXES[scheme]:
        allowed = ", ".join(f"{p}-" for p in _PREFIXES[scheme])
        raise TagSequenceError(index, f"unknown tag {tag!r} ({scheme} allows O and {allowed} followed by a type)")
    return match.group(1), match.group(2)


def _describe(tags: Sequence[str], index: int) -> str:
    return "at the start of the sentence" if index == 0 else f"after {tags[index - 1]!r}"


def tags_to_spans(tags: Sequence[str], scheme: str = "IOB2", repair: bool = False) -> Tuple[List[Span], List[int]]:
    """
    Decodes `tags` written in `scheme` (one of `INPUT_SCHEMES`) into spans, strictly.

    Returns the spans (sorted by position) and the indices of tags that were repaired: with `repair=True`, an IOB2
    `I-X` that does not continue an `X` span (after `O`, at the start, or after a span of another type) starts a new
    span, as if it were `B-X`. Everything else that is malformed raises `TagSequenceError`.
    """
    if scheme not in _PREFIXES:
        raise ValueError(f"unknown tag scheme {scheme!r}; expected one of {', '.join(INPUT_SCHEMES)}")
    spans: List[Span] = []
    repaired: List[int] = []
    label: Optional[str] = None  # type of the open span
    start = 0
    for index, tag in enumerate(tags):
        prefix, kind = _split(tag, scheme, index)
        if scheme in _LAST_UNIT:
            last, unit = _LAST_UNIT[scheme]
            if prefix in ("B", unit, None) and label is not None:
                raise TagSequenceError(index, f"{tags[start]!r} at token {start + 1} is not closed by "
                                              f"{last + '-' + label!r} before {tag!r}")
            if prefix in ("I", last) and label != kind:
                raise TagSequenceError(index, f"{tag!r} does not continue a {'B-' + kind!r} span "
                                              f"({_describe(tags, index)})")
            if prefix == "B":
                label, start = kind, index
            elif prefix == last:
                spans.append((label, start, index))
                label = None
            elif prefix == unit:
                spans.append((kind, index, index))
            continue
        if prefix == "I" and label == kind:
            continue
        if label is not None:
            spans.append((label, start, index - 1))
            label = None
        if prefix == "I" and scheme != "IOB1":
            if not repair:
                raise TagSequenceError(index, f"{tag!r} does not continue a {kind!r} span ({_describe(tags, index)})")
            repaired.append(index)
        if prefix is not None:
            label, start = kind, index
    if label is not None:
        if scheme in _LAST_UNIT:
            raise TagSequenceError(start, f"{tags[start]!r} at token {start + 1} is not closed by "
                                          f"{_LAST_UNIT[scheme][0] + '-' + label!r} before the end of the sentence")
        spans.append((label, start, len(tags) - 1))
    return spans, repaired


def spans_to_tags(length: int, spans: Sequence[Span], scheme: str = "BIOUL") -> List[str]:
    """Encodes non-overlapping spans over `length` tokens in `scheme` (one of `OUTPUT_SCHEMES`)."""
    if scheme not in OUTPUT_SCHEMES:
        raise ValueError(f"unknown coding scheme {scheme!r}; expected one of {', '.join(OUTPUT_SCHEMES)}")
    tags = ["O"] * length
    for label, start, end in spans:
        if not 0 <= start <= end < length or any(tag != "O" for tag in tags[start : end + 1]):
            raise ValueError(f"span {(label, start, end)} is out of range or overlaps another")
        if scheme == "BIOUL" and start == end:
            tags[start] = f"U-{label}"
            continue
        tags[start] = f"B-{label}"
        for index in range(start + 1, end + 1):
            tags[index] = f"I-{label}"
        if scheme == "BIOUL":
            tags[end] = f"L-{label}"
    return tags


def convert_tags(tags: Sequence[str], from_scheme: str, to_scheme: str, repair: bool = False) -> List[str]:
    """`tags` re-encoded from `from_scheme` (an input scheme) to `to_scheme` (an output scheme)."""
    spans, _ = tags_to_spans(tags, from_scheme, repair=repair)
    return spans_to_tags(len(tags), spans, to_scheme)
