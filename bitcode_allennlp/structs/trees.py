"""Constituency trees: reading PTB bracketed text, cleaning, depth-safe walks, writing.

Where this sits: the readers `ptb_hash` (the part-of-speech tags of trees) and `ptb_spans` (the parser's targets)
read PTB files with `scan_trees`, `parse_tree` and `clean_tree`; the parser's targets are the labelled spans of the
binarized tree, `factorize(binarize(tree))` (`structs/binarization.py`); the parser predicts a full binary
bracketing with labels, and `build` turns it back into an n-ary tree, which `evalb_f1` scores against the gold
tree. Every tree is written here: `tree_to_string` (one line, as read: the readers' gold trees, the parser's
`trees`, EVALB's input), `tree_to_ptb` (the same with PTB bracket escapes: the predictor's `tree`), `tree_to_json`
(the predictor's `tree_json`), and `constituent_trees`, the trees of benepar-style constituents
(`tree_constituents`) that the spaCy extensions write as `parse_string`. Pure Python on `nltk.Tree`, no
AllenNLP and no torch (spaCy extensions and the light `allennlp bits` process import it): `DataFormatError` is
imported only when a file turns out to be malformed.

Reading: `scan_trees` splits a file into trees by balanced brackets (with lines and columns for errors),
`parse_tree` builds an `nltk.Tree`, and `clean_tree` removes `-NONE-` traces, root wrappers and (optionally)
function tags. nltk's corpus readers are not used (nltk >= 3.10 refuses paths under world-writable directories,
and they give no line numbers).

Binarization (`binarize`, `factorize`, `build`) lives in `structs/binarization.py`; `check_tree` here says
whether a tree can be binarized.

Depth-safe walks: a tree can be as deep as its sentence is long (a right-branching sentence as written, the
left-binarized form of a flat one, a parser's predicted chain), and nltk's `Tree.leaves`, `pos`, `treepositions`,
`subtrees`, `copy(deep=True)`, `pformat` / `str` and `==` recurse once per level, so they raise `RecursionError`
past a few hundred levels (`Tree.fromstring`, `chomsky_normal_form` with `vertMarkov=0` and `collapse_unary` loop).
Every function here, and every tree walk in this package, uses explicit stacks instead: `fold_tree` (bottom-up),
`copy_tree`, `subtrees`, `leaf_slots`, `tree_leaves`, `tree_pos` and `tree_to_string` (one-line PTB text).
"""
import bisect
import itertools
import re
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

from nltk import Tree

from bitcode_allennlp.common.text_lines import data_format_error, numbered_lines

if TYPE_CHECKING:
    from bitcode_allennlp.host.errors import DataFormatError

ROOT_LABEL = "TOP"
MARK = "|<>"  # suffix of the labels of nodes added by binarization
JOIN = "+"  # joins the labels of a collapsed unary chain
PLACEHOLDER_TAG = "XX"  # part of speech of a written tree's words when no tags are given
TRACE = "-NONE-"
ROOT_WRAPPERS = ("", "TOP", "ROOT", "VROOT")
PTB_ESCAPES = {"(": "-LRB-", ")": "-RRB-", "{": "-LCB-", "}": "-RCB-", "[": "-LSB-", "]": "-RSB-"}
_ESCAPE_TABLE = str.maketrans(PTB_ESCAPES)
# Brackets and words are separated by ASCII whitespace; other Unicode whitespace (CRAFT has U+2009, U+200A in a
# few words) stays inside a word, where the token policy judges it.
_TOKEN = re.compile(r"[()]|[^ \t\n\r\x0b\x0c()]+")
_FUNCTION_TAG = re.compile(r"(?<=.)[-=]")
_DEPTH = {"(": 1, ")": -1}

Span = Tuple[int, int, Optional[str]]
Constituent = Tuple[int, int, Tuple[str, ...]]


def is_preterminal(node: Union[Tree, str]) -> bool:
    """Whether `node` is a part-of-speech node: a `Tree` whose only child is a word."""
    return isinstance(node, Tree) and len(node) == 1 and not isinstance(node[0], Tree)


# ------------------------------------------------------------------------------------------ depth-safe walks


def fold_tree(tree: Union[Tree, Any], leaf: Callable[[Any], Any], node: Callable[[Tree, List[Any]], Any]) -> Any:
    """
    Bottom-up evaluation without recursion: `leaf(x)` for each child that is not a `Tree` (a word), and
    `node(subtree, [values of its children])` for each `Tree`, children before parents; returns the root's value.
    """
    if not isinstance(tree, Tree):
        return leaf(tree)
    values: List[Any] = []
    stack: List[Tuple[Any, bool]] = [(tree, False)]
    while stack:
        item, finished = stack.pop()
        if finished:
            start = len(values) - len(item)
            children = values[start:]
            del values[start:]
            values.append(node(item, children))
        elif isinstance(item, Tree):
            stack.append((item, True))
            stack.extend((child, False) for child in reversed(item))
        else:
            values.append(leaf(item))
    return values[0]


def copy_tree(tree: Tree) -> Tree:
    """`tree.copy(deep=True)` (every node of the copy of `type(tree)`; words shared), at any depth."""
    cls = type(tree)
    return fold_tree(tree, lambda word: word, lambda subtree, children: cls(subtree.label(), children))


def subtrees(tree: Tree) -> Iterator[Tree]:
    """`tree.subtrees()`: every node that is a `Tree`, in preorder, at any depth."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(child for child in reversed(node) if isinstance(child, Tree))


def leaf_slots(tree: Tree) -> Iterator[Tuple[Tree, int]]:
    """`(parent, index)` of each word, left to right, so that `parent[index] = new` replaces it, at any depth."""
    stack = [(tree, index) for index in range(len(tree) - 1, -1, -1)]
    while stack:
        parent, index = stack.pop()
        child = parent[index]
        if isinstance(child, Tree):
            stack.extend((child, position) for position in range(len(child) - 1, -1, -1))
        else:
            yield parent, index


def tree_leaves(tree: Tree) -> List[Any]:
    """`tree.leaves()` at any depth."""
    return [parent[index] for parent, index in leaf_slots(tree)]


def tree_pos(tree: Tree) -> List[Tuple[Any, Any]]:
    """`tree.pos()`, `(word, label of its parent)` left to right, at any depth."""
    return [(parent[index], parent.label()) for parent, index in leaf_slots(tree)]


# ------------------------------------------------------------------------------------------------ reading


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


def scan_trees(path: str) -> Iterator[Union[RawTree, "DataFormatError"]]:
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
    bad: Optional["DataFormatError"] = None  # first problem inside the current tree
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
                yield data_format_error(
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
                        yield data_format_error(path, number, f"unbalanced brackets: ')' at column {column} closes "
                                                              "nothing")
                    else:
                        yield data_format_error(path, number, f"text {token!r} at column {column} is outside any "
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
        yield data_format_error(
            path, start_line, f"unbalanced brackets: the '(' at column {start_column} is never closed "
            f"({depth} bracket(s) still open at the end of the file)",
        )
    elif not found:
        yield data_format_error(path, None, "no trees (the file is empty)")


def parse_tree(path: str, raw: RawTree) -> Tree:
    """
    An `nltk.Tree` with the labels and words as written. Every word must be alone in a labelled bracket (its
    part-of-speech); only the root may be unlabelled, as in `( (S ...) )`. Raises `DataFormatError`.
    """

    def error(index: int, message: str) -> "DataFormatError":
        line, column = raw.position(index)
        return data_format_error(path, line, message.replace("<where>", f"at column {column}"))

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
        raise data_format_error(path, line, f"tree has no words after removing {TRACE} traces")
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


# ------------------------------------------------------------------------------------------------ writing


def tree_to_string(tree: Union[Tree, str], escape: Optional[Callable[[str], str]] = None) -> str:
    """
    One-line bracketed form, readable by `scan_trees` / `parse_tree` (an unlabelled root is `( ...)`), at any
    depth: `(S (NP (NN w)) (VP ...))`. `escape` (e.g. PTB bracket escapes) is applied to each label and word.
    """
    if not isinstance(tree, Tree):
        return escape(tree) if escape is not None else tree
    parts: List[str] = []
    stack: List[Any] = [tree]  # Trees and words still to write, and literal text (in a 1-tuple)
    while stack:
        item = stack.pop()
        if isinstance(item, tuple):
            parts.append(item[0])
        elif isinstance(item, Tree):
            label = item.label()
            parts.append(f"({escape(label) if escape is not None else label} ")
            stack.append((")",))
            for position in range(len(item) - 1, -1, -1):
                stack.append(item[position])
                if position:
                    stack.append((" ",))
        else:
            parts.append(escape(item) if escape is not None else f"{item}")
    return "".join(parts)


def ptb_escape(text: str) -> str:
    """Brackets as in the Penn Treebank (`(` → `-LRB-`, `{` → `-LCB-`, `[` → `-LSB-`, ...), as in benepar."""
    return text.translate(_ESCAPE_TABLE)


def tree_to_ptb(tree: Union[Tree, str]) -> str:
    """One-line PTB string; brackets in words and tags escaped (`(` → `-LRB-`, ...) so that it reads back."""
    return tree_to_string(tree, escape=ptb_escape)


def _json_node(tree: Tree, children: List[Dict[str, Any]]) -> Dict[str, Any]:
    if is_preterminal(tree):
        return {"label": tree.label(), "word": tree[0]}
    return {"label": tree.label(), "children": children}


def tree_to_json(tree: Union[Tree, str]) -> Dict[str, Any]:
    """`(NP (DT the) (NN ring))` → `{"label": "NP", "children": [{"label": "DT", "word": "the"}, ...]}`."""
    return fold_tree(tree, lambda word: {"word": word}, _json_node)


def tree_constituents(tree: Dict[str, Any]) -> List[Constituent]:
    """
    The constituents (word indices, end exclusive) of a tree in the predictor's nested form (`tree_json`:
    `{"label", "children"}` for phrases, `{"label", "word"}` for parts of speech), without its root label.
    """
    constituents: List[Constituent] = []
    position = 0  # the next word
    # ("visit", children, labels), ("word",) or ("close", index of the constituent, its start, labels); a
    # stack, not recursion: a tree can be as deep as its sentence is long.
    stack: List[Tuple[Any, ...]] = [("visit", tree["children"], ())] if tree.get("children") else []
    while stack:
        item = stack.pop()
        if item[0] == "word":
            constituents.append((position, position + 1, ()))
            position += 1
        elif item[0] == "close":
            _, index, start, labels = item
            constituents[index] = (start, position, labels)
        else:
            _, children, labels = item
            while len(children) == 1 and "word" not in children[0]:  # unary chain: one constituent
                labels += (children[0]["label"],)
                children = children[0]["children"]
            if len(children) == 1:  # a part of speech: a word, under its chain
                constituents.append((position, position + 1, labels))
                position += 1
                continue
            stack.append(("close", len(constituents), position, labels))
            constituents.append((position, position, labels))
            stack.extend(("word",) if "word" in child else ("visit", child["children"], (child["label"],))
                         for child in reversed(children))
    return constituents


def constituent_trees(
    starts: Sequence[int],
    ends: Sequence[int],
    labels: Sequence[Sequence[str]],
    position: int,
    word: Callable[[int], Tuple[str, str]],
) -> List[Tree]:
    """
    The trees of constituent `position` of preorder constituents (`starts`, `ends` and `labels` of each, as
    `tree_constituents` gives them): its chain of labels, top first, over its children, the constituents after it
    that start before its end; a constituent of one word is its chain over the word's part of speech, `word(i)`
    giving `(tag, word)` as they are to be written. A list, since a constituent labelled `()` (a sentence whose root
    has several children) is its children alone; `tree_to_string` of each, joined by spaces, is benepar's
    `parse_string`.
    """

    def chain(node_labels: Sequence[str], children: List[Tree]) -> List[Tree]:
        for label in reversed(node_labels):
            children = [Tree(label, children)]
        return children

    result: List[Tree] = []
    # Open phrases as (end, labels, children so far), innermost last (no recursion: a tree can be as deep as its
    # sentence is long).
    open_phrases: List[Tuple[int, Sequence[str], List[Tree]]] = []
    cursor = position
    while True:
        start, end, node_labels = starts[cursor], ends[cursor], labels[cursor]
        cursor += 1
        if end - start == 1:  # a word (a phrase over one word is the word's unary chain)
            tag, text = word(start)
            (open_phrases[-1][2] if open_phrases else result).extend(chain(node_labels, [Tree(tag, [text])]))
        else:
            open_phrases.append((end, node_labels, []))
        while open_phrases and not (cursor < len(starts) and starts[cursor] < open_phrases[-1][0]):
            _, phrase_labels, children = open_phrases.pop()
            (open_phrases[-1][2] if open_phrases else result).extend(chain(phrase_labels, children))
        if not open_phrases:
            return result


# ---------------------------------------------------------------------------- what binarization accepts


def check_tree(tree: Tree) -> None:
    """`ValueError` unless `binarize` accepts `tree`: phrase labels non-empty, without `+`, not ending in `|<>`;
    every word alone under its part of speech."""
    if not isinstance(tree, Tree) or len(tree) == 0:
        raise ValueError(f"not a tree with words: {tree!r}")
    stack = [tree]
    while stack:
        node = stack.pop()
        if is_preterminal(node):
            continue
        label = node.label()
        if not label or JOIN in label or label.endswith(MARK):
            raise ValueError(f"phrase label {label!r} cannot be binarized (it is empty, contains {JOIN!r} or "
                             f"ends with {MARK!r})")
        for child in node:
            if not isinstance(child, Tree) or len(child) == 0:
                raise ValueError(f"({label} ...) has a word or an empty node beside other children; a word must "
                                 "be alone under its part of speech")
            stack.append(child)
