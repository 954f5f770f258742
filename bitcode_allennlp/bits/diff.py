"""Two sentences' codes side by side with the differing bits marked, like the paper's Figure 3 (`allennlp bits diff`).

The words of sentence A and sentence B are aligned by `difflib.SequenceMatcher` on the word strings: equal words
pair up, a replaced stretch pairs position by position (`him` / `himself`), and what is left over (an inserted or
deleted word, the tail of an unequal replacement) stays unpaired. `pair=(i, j)` compares only word i of A with word
j of B ("two words in context"). For each pair the codes are shown in hex and in bits (head 0 first, grouped by
hex digit); a bit that differs is marked: `^` under it in text, red (A) / blue (B) with ANSI colours on a
terminal, and `<span class="a|b">` in HTML, where the hex digits that hold a differing bit are coloured too.
"""
import difflib
import html
import json
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from bitcode_allennlp.common.code_format import check_num_bits, num_hex_digits
from bitcode_allennlp.common.code_value import Codes
from bitcode_allennlp.common.codes_line import check_record
from bitcode_allennlp.common.text_lines import numbered_lines

RED, BLUE, BOLD, RESET = "\x1b[31m", "\x1b[34m", "\x1b[1m", "\x1b[0m"


class AlignedPair(NamedTuple):
    """Word `index_a` of A and word `index_b` of B (either `None` when unpaired), and the heads whose bits differ."""

    index_a: Optional[int]
    index_b: Optional[int]
    differing: List[int]


class CodeDiff(NamedTuple):
    """Both sentences (words, hex codes, labels or `None`) and their aligned pairs."""

    num_bits: int
    words_a: List[str]
    codes_a: List[str]
    labels_a: Optional[List[str]]
    words_b: List[str]
    codes_b: List[str]
    labels_b: Optional[List[str]]
    pairs: List[AlignedPair]
    name_a: str = "A"
    name_b: str = "B"


def code_bits(code: str, num_bits: int) -> List[int]:
    """A hex code's K bits as 0/1, head 0 first (`Codes.from_hex`, strict)."""
    return Codes.from_hex([code], num_bits).bit_lists[0]


def differing_bits(code_a: str, code_b: str, num_bits: int) -> List[int]:
    """Heads (0 = most significant bit) whose bits differ between two hex codes."""
    bits = Codes.from_hex([code_a, code_b], num_bits).bits  # (2, K)
    return np.flatnonzero(bits[0] != bits[1]).tolist()


def align(words_a: Sequence[str], words_b: Sequence[str]) -> List[Tuple[Optional[int], Optional[int]]]:
    """Word alignment of A and B in reading order (see the module docstring)."""
    aligned: List[Tuple[Optional[int], Optional[int]]] = []
    matcher = difflib.SequenceMatcher(a=list(words_a), b=list(words_b), autojunk=False)
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        paired = min(a1 - a0, b1 - b0) if tag in ("equal", "replace") else 0
        aligned += [(a0 + i, b0 + i) for i in range(paired)]
        aligned += [(i, None) for i in range(a0 + paired, a1)]
        aligned += [(None, j) for j in range(b0 + paired, b1)]
    return aligned


def diff_codes(
    words_a: Sequence[str], codes_a: Sequence[str], words_b: Sequence[str], codes_b: Sequence[str], num_bits: int,
    labels: Tuple[Optional[Sequence[str]], Optional[Sequence[str]]] = (None, None),
    pair: Optional[Tuple[int, int]] = None, names: Tuple[str, str] = ("A", "B"),
) -> CodeDiff:
    """
    Aligns two coded sentences and finds the differing bits of each aligned pair.

    # Parameters

    words_a, codes_a : `Sequence[str]`
        Sentence A's words and their hex codes (`ceil(K / 4)` digits); likewise B.
    num_bits : `int`
        K.
    labels : `Tuple[Optional[Sequence[str]], Optional[Sequence[str]]]`, optional (default = `(None, None)`)
        Gold or predicted tags of A and of B (either `None`: none), shown beside the words.
    pair : `Tuple[int, int]`, optional (default = `None`)
        Compare only word `pair[0]` of A with word `pair[1]` of B (0-based) instead of aligning the sentences.
    names : `Tuple[str, str]`, optional (default = `("A", "B")`)
        How the two sentences are named in the output.
    """
    check_num_bits(num_bits)
    labels_a, labels_b = labels
    for words, codes in ((words_a, codes_a), (words_b, codes_b)):
        if len(words) != len(codes):
            raise ValueError(f"{len(words)} words but {len(codes)} codes")
        Codes.from_hex(codes, num_bits)  # raises on a malformed code: "code 3: not a hex code ..."
    if pair is not None:
        i, j = pair
        if not (0 <= i < len(words_a) and 0 <= j < len(words_b)):
            raise ValueError(f"word positions {pair} are outside the sentences ({len(words_a)} and {len(words_b)} "
                             "words; positions are 0-based)")
        aligned: List[Tuple[Optional[int], Optional[int]]] = [(i, j)]
    else:
        aligned = align(words_a, words_b)
    pairs = [AlignedPair(i, j, differing_bits(codes_a[i], codes_b[j], num_bits) if i is not None and j is not None
                         else []) for i, j in aligned]
    return CodeDiff(num_bits, list(words_a), list(codes_a), None if labels_a is None else list(labels_a),
                    list(words_b), list(codes_b), None if labels_b is None else list(labels_b), pairs, *names)


def bit_groups(num_bits: int) -> List[List[int]]:
    """Heads grouped by hex digit, head 0 first (the first group is short when K is not a multiple of 4)."""
    first = num_bits % 4 or 4
    groups = [list(range(first))]
    groups += [list(range(start, start + 4)) for start in range(first, num_bits, 4)]
    return groups


def digit_heads(num_bits: int) -> List[List[int]]:
    """For each hex digit of a K-bit code (left to right), the heads whose bits it holds (the padding bits of a
    short first digit hold none)."""
    digits = num_hex_digits(num_bits)
    groups = bit_groups(num_bits)
    return [[] for _ in range(digits - len(groups))] + groups


def _sentence(words: List[str], marked: Optional[int]) -> str:
    return " ".join(f"[{w}]" if i == marked else w for i, w in enumerate(words))


def render_text(diff: CodeDiff, color: bool = False) -> str:
    """
    The diff as plain text: both sentences, then one block per aligned pair: a line per word (word, label, hex,
    bits) and under the two lines a line with `^` under each differing bit. `color` adds ANSI colours (differing
    bits and hex digits of A red, of B blue).
    """
    k = diff.num_bits
    single = diff.pairs[0] if len(diff.pairs) == 1 and len(diff.words_a) + len(diff.words_b) > 2 else None
    name_width = max(len(diff.name_a), len(diff.name_b))
    word_width = max([len(w) for w in diff.words_a + diff.words_b] + [4])
    label_width = max([len(t) for t in (diff.labels_a or []) + (diff.labels_b or [])] + [0])
    hex_width = num_hex_digits(k)
    groups = bit_groups(k)
    digits = digit_heads(k)

    def paint(text: str, on: bool, colour: str) -> str:
        return f"{colour}{text}{RESET}" if color and on else text

    def code_line(name, words, codes, labels, index, differing, colour) -> str:
        label = (labels[index] if labels else "").ljust(label_width)
        hex_text = "".join(paint(ch, any(h in differing for h in heads), colour)
                           for ch, heads in zip(codes[index], digits))
        bits = code_bits(codes[index], k)
        bit_text = " ".join("".join(paint(str(bits[h]), h in differing, colour) for h in group) for group in groups)
        return (f"{name.ljust(name_width)}  {words[index].ljust(word_width)}  " + (f"{label}  " if labels else "")
                + f"{hex_text}  {bit_text}")

    lines = [f"{diff.name_a}: {_sentence(diff.words_a, single.index_a if single else None)}",
             f"{diff.name_b}: {_sentence(diff.words_b, single.index_b if single else None)}",
             f"K = {k} bits, head 0 first, grouped by hex digit; ^ marks a bit that differs", ""]
    bits_column = name_width + 2 + word_width + 2 + (label_width + 2 if diff.labels_a or diff.labels_b else 0) \
        + hex_width + 2
    for pair in diff.pairs:
        if pair.index_a is not None:
            lines.append(code_line(diff.name_a, diff.words_a, diff.codes_a, diff.labels_a, pair.index_a,
                                   pair.differing, RED) + ("" if pair.index_b is not None
                                                           else f"  (no counterpart in {diff.name_b})"))
        if pair.index_b is not None:
            line = code_line(diff.name_b, diff.words_b, diff.codes_b, diff.labels_b, pair.index_b, pair.differing,
                             BLUE)
            if pair.index_a is None:
                line += f"  (no counterpart in {diff.name_a})"
            else:
                count = len(pair.differing)
                line += "  identical" if count == 0 else \
                    f"  {count} bit{'s' if count > 1 else ''} differ{'s' if count == 1 else ''}: " \
                    + " ".join(map(str, pair.differing))
            lines.append(line)
        if pair.index_a is not None and pair.index_b is not None and pair.differing:
            marks = " ".join("".join("^" if h in pair.differing else " " for h in group) for group in groups)
            lines.append((" " * bits_column + marks).rstrip())
        lines.append("")
    lines.append(_summary(diff.pairs))
    return "\n".join(lines)


def _summary(pairs: List[AlignedPair]) -> str:
    """The last line of `render_text`: aligned pairs, those with identical codes, differing bits, mean distance."""
    paired = [pair for pair in pairs if pair.index_a is not None and pair.index_b is not None]
    total = sum(len(pair.differing) for pair in paired)
    identical = sum(not pair.differing for pair in paired)
    mean = total / len(paired) if paired else 0.0
    return (f"{len(paired)} aligned pair{'' if len(paired) == 1 else 's'}, {identical} with identical codes, "
            f"{total} differing bit{'' if total == 1 else 's'} (mean Hamming distance {mean:.2f})")


HTML_STYLE = """
body { font-family: sans-serif; margin: 1.5em; }
table { border-collapse: collapse; }
td, th { padding: 2px 10px; text-align: left; vertical-align: top; }
tr.pair td { border-top: 1px solid #ccc; }
code { font-family: "DejaVu Sans Mono", monospace; }
.a { color: #d62728; font-weight: bold; }
.b { color: #1f5fbf; font-weight: bold; }
.note { color: #555; }
"""


def render_html(diff: CodeDiff, title: str = "Codes of two sentences") -> str:
    """The diff as a self-contained HTML page: one table row per aligned word pair; the differing bits and hex
    digits of A in red (`<span class="a">`), of B in blue (`<span class="b">`), each bit span titled with its head."""
    k = diff.num_bits
    groups = bit_groups(k)
    digits = digit_heads(k)
    esc = html.escape

    def code_cells(codes: List[str], index: Optional[int], differing: List[int], cls: str) -> str:
        if index is None:
            return "<td></td><td></td>"
        hex_html = "".join(f'<span class="{cls}">{ch}</span>' if any(h in differing for h in heads) else ch
                           for ch, heads in zip(codes[index], digits))
        bits = code_bits(codes[index], k)
        bit_html = " ".join("".join(f'<span class="{cls}" title="bit {h}">{bits[h]}</span>' if h in differing
                                    else str(bits[h]) for h in group) for group in groups)
        cells = [f"<td><code>{hex_html}</code></td>", f"<td><code>{bit_html}</code></td>"]
        return "".join(cells if cls == "a" else cells[::-1])  # B mirrors A: bits, then hex

    def word_cells(words: List[str], labels: Optional[List[str]], index: Optional[int]) -> str:
        word = "" if index is None else esc(words[index])
        cells = f"<td>{word}</td>"
        if diff.labels_a is not None or diff.labels_b is not None:
            cells += f'<td class="note">{"" if index is None or labels is None else esc(labels[index])}</td>'
        return cells

    has_labels = diff.labels_a is not None or diff.labels_b is not None
    label_head = "<th>tag</th>" if has_labels else ""
    rows = [f"<tr><th>{esc(diff.name_a)}</th>{label_head}<th>hex</th><th>bits</th><th>bits</th><th>hex</th>"
            f"<th>{esc(diff.name_b)}</th>{label_head}<th>differing bits</th></tr>"]
    for pair in diff.pairs:
        if pair.index_a is None or pair.index_b is None:
            distance = "unpaired"
        else:
            distance = f"{len(pair.differing)}" + (f": {' '.join(map(str, pair.differing))}" if pair.differing else "")
        rows.append('<tr class="pair">' + word_cells(diff.words_a, diff.labels_a, pair.index_a)
                    + code_cells(diff.codes_a, pair.index_a, pair.differing, "a")
                    + code_cells(diff.codes_b, pair.index_b, pair.differing, "b")
                    + word_cells(diff.words_b, diff.labels_b, pair.index_b) + f"<td>{distance}</td></tr>")
    single = diff.pairs[0] if len(diff.pairs) == 1 and len(diff.words_a) + len(diff.words_b) > 2 else None
    return "\n".join([
        "<!DOCTYPE html>", '<html><head><meta charset="utf-8">', f"<title>{esc(title)}</title>",
        f"<style>{HTML_STYLE}</style></head><body>", f"<h3>{esc(title)}</h3>",
        f"<p><b>{esc(diff.name_a)}:</b> {esc(_sentence(diff.words_a, single.index_a if single else None))}<br>",
        f"<b>{esc(diff.name_b)}:</b> {esc(_sentence(diff.words_b, single.index_b if single else None))}</p>",
        f'<p class="note">K = {k} bits per word, head 0 first, grouped by hex digit. Bits that differ: '
        f'<span class="a">{esc(diff.name_a)}</span>, <span class="b">{esc(diff.name_b)}</span>.</p>',
        "<table>", *rows, "</table>", "</body></html>", ""])


def codes_from_corpus(path: str, lines: Sequence[int]) -> Tuple[int, List[Dict[str, Any]]]:
    """
    Sentences of a codes corpus by their 1-based line numbers in the file (lines split on LF only, as `grep -n`
    numbers them: `numbered_lines`, as `read_codes_corpus` reads).

    # Returns

    `(K, [{"words", "codes", "tags" or None, "name"}])`, one dict per requested line.

    # Raises

    `DataFormatError` ``<path>, line <n>: invalid UTF-8 (...)`` for a requested line that is not UTF-8 (other lines
    are not read as text); `ValueError` naming the path and line for any other problem.
    """
    wanted = {line: None for line in lines}
    num_bits = None
    count = 0
    for count, text, decode_error in numbered_lines(path):  # bytes, decoded per line: bad UTF-8 names its line
        if count not in wanted:
            continue
        if decode_error is not None:
            raise decode_error
        if not text.strip():
            raise ValueError(f"{path}, line {count}: an empty line, not a sentence (--lines)")
        try:
            value = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}, line {count}: not JSON ({error.msg} at column {error.colno})") from None
        try:
            line = check_record(value, None)
        except ValueError as error:
            raise ValueError(f"{path}, line {count}: {error}") from None
        if num_bits is not None and line.num_bits != num_bits:
            raise ValueError(f"{path}: lines of {num_bits} and {line.num_bits} bits")
        num_bits = line.num_bits
        wanted[count] = {"words": line.words, "codes": value["codes"], "tags": line.gold_tags(),
                         "name": f"line {count}"}
    missing = [line for line, value in wanted.items() if value is None]
    if missing:
        raise ValueError(f"--lines: {path} has {count} line{'' if count == 1 else 's'}, so no line {missing[0]} "
                         "(lines are 1-based)")
    return int(num_bits), [wanted[line] for line in lines]  # type: ignore[arg-type,misc]


def codes_from_archive(archive_path: str, sentences: Sequence[str], cuda_device: int = -1,
                       whitespace: bool = False) -> Tuple[int, List[Dict[str, Any]]]:
    """
    Codes of raw sentences from a hashing-stage archive, through the archive's default predictor (`hash_tagger` or
    `hash_parser`): spaCy tokenization, or `whitespace` splitting.

    # Returns

    `(K, [{"words", "codes", "tags" or None, "name"}])`.
    """
    from allennlp.models.archival import load_archive
    from allennlp.predictors import Predictor

    archive = load_archive(archive_path, cuda_device=cuda_device)
    num_bits = getattr(archive.model, "num_bits", None)
    if num_bits is None:
        raise ValueError(f"{archive_path} has no hash layer, so its words have no codes")
    predictor = Predictor.from_archive(archive)
    inputs = [{"tokens": s.split()} if whitespace else {"sentence": s} for s in sentences]
    outputs = predictor.predict_batch_json(inputs)
    return num_bits, [{"words": o["words"], "codes": o["codes"], "tags": o.get("tags"), "name": name}
                      for o, name in zip(outputs, ("A", "B"))]
