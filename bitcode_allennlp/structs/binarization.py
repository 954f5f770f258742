"""Binarization of constituency trees: the CRF parser's binary trees and their labelled spans, and back.

Where this sits: the `ptb_spans` reader's targets are the labelled spans of the binarized tree,
`factorize(binarize(tree))`; the parser (`hash_span_parser`) predicts a full binary bracketing with labels, and
`build` turns it back into an n-ary tree, which `evalb_f1` scores against the gold tree. Reading, cleaning, the
depth-safe walks, `check_tree` (what `binarize` accepts) and writing are in `structs/trees.py`. Pure Python on
`nltk.Tree`, no AllenNLP and no torch; every walk uses explicit stacks (a tree can be as deep as its sentence is
long).

The scheme (Zhang et al., 2020) is supar's `Tree.binarize` / `factorize` / `build`
(supar 1.1.4, CRF constituency parser), with `+` instead of `::` joining unary chains. `binarize(tree)` is supar's
`binarize(Tree("TOP", [tree]))[0]`:

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
"""
from typing import Iterable, List, Optional, Sequence, Tuple, Union

from nltk import Tree

from bitcode_allennlp.structs.trees import (JOIN, MARK, PLACEHOLDER_TAG, ROOT_LABEL, Span, check_tree, copy_tree,
                                            is_preterminal)


def binarize(tree: Tree) -> Tree:
    """
    The binary form of a cleaned n-ary tree (see the module docstring); `tree` is not changed. Raises
    `ValueError` for a phrase label that is empty, contains `+` or ends in `|<>`, and for misplaced words.
    """
    check_tree(tree)
    root = Tree(ROOT_LABEL, [copy_tree(tree)])
    if is_preterminal(tree):
        root[0] = Tree(ROOT_LABEL + MARK, [root[0]])
    stack = [root]
    while stack:
        node = stack.pop()
        if len(node) > 1:
            for index, child in enumerate(node):
                if is_preterminal(child):
                    node[index] = Tree(node.label() + MARK, [child])
        stack.extend(child for child in node if not is_preterminal(child))
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
        elif not isinstance(node, Tree) or is_preterminal(node):
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
