"""Binarized constituency trees for the CRF parser (Zhang et al., 2020): `binarize`, `factorize`, `build`.

Where this sits: the `ptb_spans` reader turns each cleaned gold tree (`clean_tree` in `ptb_trees`) into the
labelled spans of its binarized form, `factorize(binarize(tree))`, the parser's targets. The parser predicts a full
binary bracketing with labels; `build` turns it back into an n-ary tree, which `evalb_f1` scores against the gold
tree. Pure functions on `nltk.Tree`; no AllenNLP.

The scheme is supar's `Tree.binarize` / `factorize` / `build` (supar 1.1.4, CRF constituency parser), with `+`
instead of `::` joining unary chains. `binarize(tree)` is supar's `binarize(Tree("TOP", [tree]))[0]`:

* a part-of-speech node with siblings goes under a new node `P|<>`, `P` its parent's label (the part of speech
  of a one-word tree that has no phrase goes under `TOP|<>`);
* left binarization, NLTK's `chomsky_normal_form("left", 0, 0)`: the nodes it adds are labelled `P|<>` too;
* unary chains of phrases collapse into one node labelled `S+VP`; part-of-speech nodes never join a chain.

Part-of-speech tags are therefore not in the spans. The span (i, i + 1) of a word is labelled with the chain of
phrases directly above its part of speech (`NP`, `S+VP`), or `P|<>` when there is none. Every span of the binary
tree has one label, and a sentence of n words has 2n - 1 spans, the first (0, n) (the tree's root or root chain).
A label ending in `|<>` (`MARK`) means "no constituent". `build` undoes all this: it drops `|<>` nodes (their
children go to the parent), expands `S+VP` into `(S (VP ...))`, puts each word under its part of speech (given,
e.g. the gold tags: EVALB deletes punctuation by its tag; else `XX`), and puts the result under a `TOP` root,
which EVALB ignores. For every tree `clean_tree` returns (phrase labels without `+`, not ending in `|<>`):

    build(tree.leaves(), factorize(binarize(tree)), [tag for _, tag in tree.pos()]) == Tree("TOP", [tree])

Depth-safe walks: a tree can be as deep as its sentence is long (a right-branching sentence as written, the
left-binarized form of a flat one, a parser's predicted chain), and nltk's `Tree.leaves`, `pos`, `treepositions`,
`subtrees`, `copy(deep=True)`, `pformat` / `str` and `==` recurse once per level, so they raise `RecursionError`
past a few hundred levels (`Tree.fromstring`, `chomsky_normal_form` with `vertMarkov=0` and `collapse_unary` loop).
Every function here, and every tree walk in this package, uses explicit stacks instead: `fold_tree` (bottom-up),
`copy_tree`, `subtrees`, `leaf_slots`, `tree_leaves`, `tree_pos` and `tree_to_string` (one-line PTB text).
"""
from typing import Any, Callable, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from nltk import Tree

ROOT_LABEL = "TOP"
MARK = "|<>"  # suffix of the labels of nodes added by binarization
JOIN = "+"  # joins the labels of a collapsed unary chain
PLACEHOLDER_TAG = "XX"  # part of speech of a built tree's words when no tags are given

Span = Tuple[int, int, Optional[str]]


def _is_preterminal(node: Union[Tree, str]) -> bool:
    return isinstance(node, Tree) and len(node) == 1 and not isinstance(node[0], Tree)


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


def check_tree(tree: Tree) -> None:
    """`ValueError` unless `binarize` accepts `tree`: phrase labels non-empty, without `+`, not ending in `|<>`;
    every word alone under its part of speech."""
    if not isinstance(tree, Tree) or len(tree) == 0:
        raise ValueError(f"not a tree with words: {tree!r}")
    stack = [tree]
    while stack:
        node = stack.pop()
        if _is_preterminal(node):
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


def binarize(tree: Tree) -> Tree:
    """
    The binary form of a cleaned n-ary tree (see the module docstring); `tree` is not changed. Raises
    `ValueError` for a phrase label that is empty, contains `+` or ends in `|<>`, and for misplaced words.
    """
    check_tree(tree)
    root = Tree(ROOT_LABEL, [copy_tree(tree)])
    if _is_preterminal(tree):
        root[0] = Tree(ROOT_LABEL + MARK, [root[0]])
    stack = [root]
    while stack:
        node = stack.pop()
        if len(node) > 1:
            for index, child in enumerate(node):
                if _is_preterminal(child):
                    node[index] = Tree(node.label() + MARK, [child])
        stack.extend(child for child in node if not _is_preterminal(child))
    root.chomsky_normal_form("left", 0, 0)
    root.collapse_unary(collapsePOS=False, collapseRoot=False, joinChar=JOIN)
    return root[0]


def factorize(tree: Tree) -> List[Tuple[int, int, str]]:
    """
    The labelled spans `(i, j, label)` (fenceposts, `0 <= i < j <= n`) of every phrase node of `tree`, in preorder;
    part-of-speech nodes give none. On `binarize`'s output: the 2n - 1 spans of a binary bracketing, the first
    `(0, n, ...)`, in the order of `sorted(spans, key=lambda span: (span[0], -span[1]))`.
    """
    spans: List[List] = []
    position = 0
    stack: List[Tuple[Union[Tree, str, int], bool]] = [(tree, False)]
    while stack:
        node, leaving = stack.pop()
        if leaving:
            spans[node][1] = position  # type: ignore[index]
        elif not isinstance(node, Tree) or _is_preterminal(node):
            position += 1
        else:
            stack.append((len(spans), True))
            spans.append([position, None, node.label()])
            stack.extend((child, False) for child in reversed(node))
    return [(i, j, label) for i, j, label in spans]


def build(
    words: Sequence[str],
    spans: Iterable[Span],
    pos_tags: Optional[Sequence[str]] = None,
    root_label: str = ROOT_LABEL,
) -> Tree:
    """
    The n-ary tree `Tree(root_label, [...])` of labelled spans `(i, j, label)` (fenceposts) over `words`, e.g. the
    parser's predicted binary bracketing, in any order. Spans labelled `None`, `""` or `...|<>` add no node;
    `A+B` adds `(A (B ...))`. Each word goes under its tag from `pos_tags` (`XX` without). The spans need not be a
    full binary bracketing: a word without a span of its own goes directly under the smallest span around it.
    Raises `ValueError` for spans that cross, repeat, or lie outside the sentence.
    """
    length = len(words)
    if pos_tags is None:
        pos_tags = [PLACEHOLDER_TAG] * length
    elif len(pos_tags) != length:
        raise ValueError(f"{len(pos_tags)} part-of-speech tags for {length} words")
    # Nodes are [start, end, label, children]; the root is the whole sentence.
    root: list = [0, length, None, []]
    preorder = [root]
    stack = [root]
    seen = set()
    for start, end, label in sorted(spans, key=lambda span: (span[0], -span[1])):
        if not 0 <= start < end <= length:
            raise ValueError(f"span ({start}, {end}) is outside a sentence of {length} words")
        if (start, end) in seen:
            raise ValueError(f"span ({start}, {end}) is given twice")
        seen.add((start, end))
        while end > stack[-1][1]:
            if start < stack[-1][1]:
                raise ValueError(f"spans ({stack[-1][0]}, {stack[-1][1]}) and ({start}, {end}) cross")
            stack.pop()
        node = [start, end, label, []]
        stack[-1][3].append(node)
        stack.append(node)
        preorder.append(node)
    # Children before parents: each node becomes the list of trees it contributes to its parent.
    made = {}
    for node in reversed(preorder):
        start, end, label, children = node
        items: List[Tree] = []
        position = start
        for child in children:
            items.extend(Tree(pos_tags[i], [words[i]]) for i in range(position, child[0]))
            items.extend(made.pop(id(child)))
            position = child[1]
        items.extend(Tree(pos_tags[i], [words[i]]) for i in range(position, end))
        if label and not label.endswith(MARK):
            for part in reversed(label.split(JOIN)):
                items = [Tree(part, items)]
        made[id(node)] = items
    return Tree(root_label, made[id(root)])
