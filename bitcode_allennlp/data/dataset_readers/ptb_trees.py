"""Penn Treebank bracketed trees: a line-tracking parser, tree cleaning, and the `ptb_hash` POS reader.

Where this sits: `ptb_hash` feeds the hashing-stage POS tagger with the words and preterminal tags of PTB-style
trees (`.mrg` files, or one tree per line like CRAFT's `craft-*.tree`). The functions below are reused by the
constituency-parsing reader: `scan_trees` splits a file into trees by balanced brackets, `parse_tree` builds an
`nltk.Tree`, and `clean_tree` removes `-NONE-` traces, root wrappers and (optionally) function tags. nltk's corpus
readers are not used (nltk >= 3.10 refuses paths under world-writable directories, and they give no line numbers).

Trees are walked with the depth-safe functions of `bitcode_allennlp.parsing.trees` (`fold_tree`, `subtrees`,
`tree_pos`, `tree_to_string`, re-exported here), never nltk's recursive methods: a tree can be as deep as its
sentence is long.
"""
import bisect
import itertools
import os
import re
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Tuple, Union

from allennlp.data.dataset_readers.dataset_reader import DatasetReader
from allennlp.data.token_indexers import TokenIndexer
from nltk import Tree

from bitcode_allennlp.common.errors import DataFormatError
from bitcode_allennlp.data.dataset_readers.tagging_reader import (
    TOKEN_POLICIES,
    Sentence,
    TaggingDatasetReader,
    apply_token_policy,
    check_choice,
    find_files,
    numbered_lines,
    resolve_path,
)
from bitcode_allennlp.parsing.trees import fold_tree, subtrees, tree_pos, tree_to_string  # noqa: F401 (re-exported)

TRACE = "-NONE-"
ROOT_WRAPPERS = ("", "TOP", "ROOT", "VROOT")
# Brackets and words are separated by ASCII whitespace; other Unicode whitespace (CRAFT has U+2009, U+200A in a
# few words) stays inside a word, where the token policy judges it.
_TOKEN = re.compile(r"[()]|[^ \t\n\r\x0b\x0c()]+")
_FUNCTION_TAG = re.compile(r"(?<=.)[-=]")
_DEPTH = {"(": 1, ")": -1}


def _column(text: str, index: int) -> int:
    """1-based column of the `index`-th token of a line."""
    for position, match in enumerate(_TOKEN.finditer(text)):
        if position == index:
            return match.start() + 1
    raise IndexError(index)


class RawTree(NamedTuple):
    """
    One balanced bracketing: its token texts (`"("`, `")"`, labels and words) and where they come from.
    `segments` holds, for each line the tree touches, `(index of its first token in tokens, line number, line
    text, index of that token among the line's tokens)`, so positions are only computed for error messages.
    """

    line: int
    tokens: List[str]
    segments: List[Tuple[int, int, str, int]]

    def position(self, index: int) -> Tuple[int, int]:
        """(line, column) of `tokens[index]`, 1-based."""
        segment = bisect.bisect_right([segment[0] for segment in self.segments], index) - 1
        start, number, text, offset = self.segments[segment]
        return number, _column(text, offset + index - start)

    def token_lines(self) -> List[int]:
        """The line of each token."""
        lines: List[int] = []
        ends = [segment[0] for segment in self.segments[1:]] + [len(self.tokens)]
        for (start, number, _, _), end in zip(self.segments, ends):
            lines.extend([number] * (end - start))
        return lines


def scan_trees(path: str) -> Iterator[Union[RawTree, DataFormatError]]:
    """
    Splits a file into trees by balanced brackets (any number of trees per line, any number of lines per tree),
    yielding a `RawTree` per tree and, in the same stream, a `DataFormatError` for each stretch that is not one:
    a `)` that closes nothing, text outside brackets, a line that is not UTF-8, a tree never closed. A `(` in the
    first column of a line always starts a new tree (inner lines of a multi-line tree are indented, as in the
    PTB), so a tree left open is reported there and the trees after it are still read.
    """
    depth = 0
    tokens: List[str] = []
    segments: List[Tuple[int, int, str, int]] = []
    bad: Optional[DataFormatError] = None  # first problem inside the current tree
    found = False
    for number, text, decode_error in numbered_lines(path):
        texts = _TOKEN.findall(text)
        if not texts:
            continue
        if depth == 0 and decode_error is None:
            # Fast path: the line is exactly one tree (one-tree-per-line files).
            depths = list(itertools.accumulate(map(_DEPTH.get, texts, itertools.repeat(0))))
            if depths[0] == 1 and depths[-1] == 0 and min(depths[:-1]) > 0:
                found = True
                yield RawTree(number, texts, [(0, number, text, 0)])
                continue
        outside_reported = False
        for index, token in enumerate(texts):
            if token == "(" and depth > 0 and index == 0 and text.startswith("("):
                start_line, start_column = RawTree(0, tokens, segments).position(0)
                yield DataFormatError(
                    path, start_line, f"unbalanced brackets: the '(' at column {start_column} is not closed "
                    f"before the tree that starts at line {number} (lines of a multi-line tree must be indented)",
                )
                depth, tokens, segments, bad = 0, [], [], None
            if depth == 0 and token != "(":
                if not outside_reported:
                    outside_reported = True
                    column = _column(text, index)
                    if decode_error is not None:
                        yield decode_error
                    elif token == ")":
                        yield DataFormatError(path, number, f"unbalanced brackets: ')' at column {column} closes "
                                                            "nothing")
                    else:
                        yield DataFormatError(path, number, f"text {token!r} at column {column} is outside any "
                                                            "bracket")
                continue
            if not segments or segments[-1][1] != number:
                segments.append((len(tokens), number, text, index))
            if decode_error is not None and bad is None:
                bad = decode_error
            tokens.append(token)
            depth += _DEPTH.get(token, 0)
            if depth == 0:
                found = True
                yield bad if bad is not None else RawTree(segments[0][1], tokens, segments)
                tokens, segments, bad = [], [], None
    if depth > 0:
        start_line, start_column = RawTree(0, tokens, segments).position(0)
        yield DataFormatError(
            path, start_line, f"unbalanced brackets: the '(' at column {start_column} is never closed "
            f"({depth} bracket(s) still open at the end of the file)",
        )
    elif not found:
        yield DataFormatError(path, None, "no trees (the file is empty)")


def parse_tree(path: str, raw: RawTree) -> Tree:
    """
    An `nltk.Tree` with the labels and words as written. Every word must be alone in a labelled bracket (its
    part-of-speech); only the root may be unlabelled, as in `( (S ...) )`. Raises `DataFormatError`.
    """

    def error(index: int, message: str) -> DataFormatError:
        line, column = raw.position(index)
        return DataFormatError(path, line, message.replace("<where>", f"at column {column}"))

    tokens = raw.tokens
    stack: List[Tuple[str, list, int]] = []  # label, children (trees, and words as token indices), index of "("
    root: Optional[Tree] = None
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token == "(":
            following = tokens[index + 1]
            if following not in ("(", ")"):
                stack.append((following, [], index))
                index += 2
                continue
            if stack:
                raise error(index, "bracket <where> has no label (only the root may be unlabelled)")
            stack.append(("", [], index))
        elif token == ")":
            label, children, opening = stack.pop()
            if not children:
                raise error(opening, f"bracket ({label} <where> has no children")
            words = [child for child in children if isinstance(child, int)]
            if words and (len(children) > 1 or not label):
                problem = "one of several words" if len(words) == len(children) else "a word beside brackets"
                word_line, word_column = raw.position(words[-1])
                raise error(opening, f"bracket ({label} <where> holds {problem} ({tokens[words[-1]]!r} at line "
                                     f"{word_line}, column {word_column}); a word must be alone in a labelled "
                                     "part-of-speech bracket")
            node = Tree(label, [tokens[words[0]]] if words else children)
            if stack:
                stack[-1][1].append(node)
            else:
                root = node
        else:
            stack[-1][1].append(index)
        index += 1
    assert root is not None and not stack, "scan_trees yields balanced trees only"
    return root


def is_preterminal(tree: Tree) -> bool:
    return len(tree) == 1 and not isinstance(list.__getitem__(tree, 0), Tree)


def remove_traces(tree: Tree) -> Optional[Tree]:
    """A copy without `-NONE-` preterminals and the constituents left empty by them; `None` if nothing is left."""

    def node(subtree: Tree, children: List[Any]) -> Optional[Tree]:
        if subtree.label() == TRACE and is_preterminal(subtree):
            return None
        kept = [child for child in children if child is not None]
        return Tree(subtree.label(), kept) if kept else None

    return fold_tree(tree, lambda leaf: leaf, node)


def strip_root_wrappers(tree: Tree) -> Tree:
    """
    Removes wrappers: an unlabelled, `TOP`, `ROOT` or `VROOT` root with a single subtree, repeatedly, so that
    `( (S ...) )` and `(TOP (S ...))` become `(S ...)`. An unlabelled root with several children is labelled TOP.
    Other roots (CRAFT's TITLE, HEADING, ...) are ordinary labels.
    """
    while tree.label() in ROOT_WRAPPERS and len(tree) == 1 and isinstance(tree[0], Tree):
        tree = tree[0]
    if tree.label() == "":
        tree = Tree("TOP", list(tree))
    return tree


def strip_function_tags(label: str) -> str:
    """`NP-SBJ-1` -> `NP`, `PP-LOC=2` -> `PP`; labels that start with `-` (`-NONE-`, `-LRB-`) are kept."""
    if label.startswith("-"):
        return label
    return _FUNCTION_TAG.split(label, 1)[0]


def clean_tree(path: str, line: int, tree: Tree, function_tags: bool = True) -> Tree:
    """
    `tree` without traces and root wrappers, and with phrase labels' function tags and indices removed unless
    `function_tags` is false (part-of-speech tags are never changed). Raises `DataFormatError` (at `line`) when
    no word is left.
    """
    cleaned = remove_traces(tree)
    if cleaned is None:
        raise DataFormatError(path, line, f"tree has no words after removing {TRACE} traces")
    cleaned = strip_root_wrappers(cleaned)
    if function_tags:
        for node in subtrees(cleaned):
            if not is_preterminal(node):
                node.set_label(strip_function_tags(node.label()))
    return cleaned


def word_lines(raw: RawTree) -> List[int]:
    """The line of each word of a parsed `raw` tree that is not a trace, i.e. of the words of `clean_tree`."""
    tokens = raw.tokens
    return [
        line
        for previous, token, line in zip(tokens, tokens[1:], raw.token_lines()[1:])
        if token not in ("(", ")") and previous not in ("(", TRACE)
    ]


@DatasetReader.register("ptb_hash")
class PtbHashDatasetReader(TaggingDatasetReader):
    """
    Reads the words and part-of-speech tags (preterminal labels) of Penn Treebank bracketed trees: one tree per
    line or multi-line `.mrg` trees, separated by balanced brackets. `-NONE-` traces are removed; escapes such as
    `-LRB-`, `-LCB-`, `` `` `` and `''` are kept verbatim as words and tags. A directory is read as all its `*.mrg`
    files (recursively, sorted). Instances: `"tokens"`, `"tags"` (namespace `"labels"`) and `"metadata"`
    (`{"words", "source"}`, source = file and line where the tree starts).

    Token policy: words are separated by ASCII whitespace; other Unicode whitespace inside a word (CRAFT has
    `Xpd<U+200A>TTD` and `Bmp7<U+2009>` in 10 train and 2 dev trees) is judged by `token_policy`: `"strict"`
    (default) raises, `"repair"` strips it from the ends of the word and writes it as `"_"` inside (`Xpd_TTD`).
    CRAFT therefore needs `"repair"`.

    # Parameters

    token_indexers : `Dict[str, TokenIndexer]`, optional (default = `{"tokens": SingleIdTokenIndexer()}`)
    token_policy : `str`, optional (default = `"strict"`)
        `"strict"` or `"repair"`, see above.
    skip_invalid : `bool`, optional (default = `False`)
        Skip malformed trees (one warning at the end) instead of raising `DataFormatError`.
    """

    def __init__(
        self,
        token_indexers: Optional[Dict[str, TokenIndexer]] = None,
        token_policy: str = "strict",
        skip_invalid: bool = False,
        **kwargs,
    ) -> None:
        super().__init__(token_indexers=token_indexers, skip_invalid=skip_invalid, **kwargs)
        check_choice("token_policy", token_policy, TOKEN_POLICIES)
        self._token_policy = token_policy

    def _sentence_items(self, file_path: str) -> Iterator[object]:
        path = resolve_path(file_path, directory_ok=True)
        files = find_files(path, ".mrg")
        if not files:
            raise DataFormatError(path, None, "no files ending in '.mrg' under this directory")
        for file in files:
            for item in scan_trees(file):
                yield item if isinstance(item, DataFormatError) else (file, item)

    def _parse_item(self, item: Tuple[str, RawTree]) -> Sentence:
        path, raw = item
        tree = clean_tree(path, raw.line, parse_tree(path, raw), function_tags=False)
        words, tags = zip(*tree_pos(tree))
        words, tags, _ = apply_token_policy(path, self._token_policy, words, tags, word_lines(raw))
        return Sentence(words, tags, f"{path}:{raw.line}")


def read_trees(path: Union[str, os.PathLike]) -> Iterator[Tuple[Tree, str]]:
    """Every tree of a file as written (strict), with its `"<file>:<line>"`; for scripts and tests."""
    path = resolve_path(path)
    for item in scan_trees(path):
        if isinstance(item, DataFormatError):
            raise item
        yield parse_tree(path, item), f"{path}:{item.line}"
