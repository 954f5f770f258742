"""spaCy extension attributes: codes on tokens, and benepar's constituency API on spans and tokens.

Where this sits: the `bitcode_*` components (`component.py`) write `Token._.bitcode` (hex) and `Token._.bits`
(K 0/1 ints, head 0 first), and the parser writes the constituents of each sentence to `Doc._.bitcode_constituents`.
The getters below read them with the semantics of benepar's spaCy integration (benepar 0.2,
`integrations/spacy_extensions.py`), so code written for benepar runs unchanged:

* constituents are kept in preorder as `(start, end, labels)`, one per node of the tree without its `TOP` root;
  a unary chain is one constituent whose `labels` is the tuple of its labels, top first (`("S", "VP")`); every
  word is a constituent (`labels` the phrases directly above its part of speech, often `()`), and a sentence
  whose root has several children is a constituent labelled `()`;
* `Span._.labels`, `Span._.parse_string` (PTB string, part of speech from `token.tag_`, `XX` when empty; brackets
  in words and tags escaped as `-LRB-` ... `-RSB-`), `Span._.constituents` (the span and every constituent in
  it, preorder), `Span._.children`, `Span._.parent` (`None` for a sentence); `Token._.labels`,
  `Token._.parse_string`, `Token._.parent`. A span that is not a constituent raises `NonConstituentException`.

One difference: whitespace tokens (which the models never see) are trimmed from a span's ends before it is
looked up, so `sent._.parse_string` works for a sentence that ends in a newline token, and a span of whitespace
alone has labels `()`, parse string `""`, no constituents or children and no parent.
Extensions are registered only when missing; if benepar's own are registered first, they win.

The trees themselves (constituents of the predictor's tree, the trees of constituents, PTB escapes, the writer) are
`bitcode_allennlp.structs.trees`; it imports nltk (about a second), so it is imported when a parse string is first
written, not with this module.
"""
from bisect import bisect_left
from typing import Dict, Iterator, List, Optional, Tuple

from spacy.tokens import Doc, Span, Token

class NonConstituentException(Exception):
    pass


# ------------------------------------------------------------------------------------------------- getters


def _constituent(span: Span) -> Tuple[Dict[str, List], Optional[int]]:
    """The constituents of the doc and the position of `span` among them (`None` for whitespace only)."""
    data = span.doc._.bitcode_constituents
    if data is None:
        raise ValueError("No constituency parse is available for this document: add a 'bitcode_parser' component "
                         "to the pipeline.")
    start, end = span.start, span.end
    while start < end and span.doc[start].is_space:
        start += 1
    while end > start and span.doc[end - 1].is_space:
        end -= 1
    if start == end:
        return data, None
    starts, ends = data["starts"], data["ends"]
    position = bisect_left(starts, start)  # preorder: starts never decrease; same start, largest first
    while position < len(starts) and starts[position] == start and ends[position] >= end:
        if ends[position] == end:
            return data, position
        position += 1
    raise NonConstituentException(f"Span is not a constituent: {span}")


def get_labels(span: Span) -> Tuple[str, ...]:
    data, position = _constituent(span)
    return () if position is None else tuple(data["labels"][position])


def parse_string(span: Span) -> str:
    data, position = _constituent(span)
    if position is None:
        return ""
    from bitcode_allennlp.structs.trees import PLACEHOLDER_TAG, constituent_trees, ptb_escape, tree_to_string

    doc = span.doc

    def word(index: int) -> Tuple[str, str]:
        token = doc[index]
        return ptb_escape(token.tag_ or PLACEHOLDER_TAG), ptb_escape(token.text)

    trees = constituent_trees(data["starts"], data["ends"], data["labels"], position, word)
    return " ".join(tree_to_string(tree) for tree in trees)


def get_subconstituents(span: Span) -> Iterator[Span]:
    data, position = _constituent(span)
    if position is None:
        return
    starts, ends = data["starts"], data["ends"]
    end = ends[position]
    while position < len(starts) and starts[position] < end:
        yield span.doc[starts[position] : ends[position]]
        position += 1


def get_child_spans(span: Span) -> Iterator[Span]:
    data, position = _constituent(span)
    if position is None:
        return
    starts, ends = data["starts"], data["ends"]
    expected, end = starts[position], ends[position]
    position += 1
    while position < len(starts) and starts[position] < end:
        if starts[position] == expected:
            yield span.doc[starts[position] : ends[position]]
            expected = ends[position]
        position += 1


def get_parent_span(span: Span) -> Optional[Span]:
    data, position = _constituent(span)
    if position is None:
        return None
    starts, ends = data["starts"], data["ends"]
    start, end = starts[position], ends[position]
    sentence_start = span.sent.start
    for previous in range(position - 1, -1, -1):
        if ends[previous] <= sentence_start:
            break  # the previous sentence
        if starts[previous] <= start and end <= ends[previous]:
            return span.doc[starts[previous] : ends[previous]]
    return None


def install_extensions() -> None:
    """Registers the extensions that are missing (idempotent)."""
    for name in ("bitcode", "bits"):
        if not Token.has_extension(name):
            Token.set_extension(name, default=None)
    if not Doc.has_extension("bitcode_constituents"):
        Doc.set_extension("bitcode_constituents", default=None)
    for name, getter in (("labels", get_labels), ("parse_string", parse_string),
                         ("constituents", get_subconstituents), ("children", get_child_spans),
                         ("parent", get_parent_span)):
        if not Span.has_extension(name):
            Span.set_extension(name, getter=getter)
    for name, getter in (("labels", get_labels), ("parse_string", parse_string), ("parent", get_parent_span)):
        if not Token.has_extension(name):
            Token.set_extension(name, getter=lambda token, getter=getter: getter(token.doc[token.i : token.i + 1]))
