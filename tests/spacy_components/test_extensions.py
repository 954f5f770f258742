"""benepar's span API (`Span._.parse_string`, `labels`, `constituents`, `children`, `parent`) on fixed trees, against
values written out by hand."""
import pytest
import spacy
from nltk import Tree
from spacy.tokens import Doc

from bitcode_allennlp.spacy_components.extensions import NonConstituentException, install_extensions
from bitcode_allennlp.structs.trees import ptb_escape, tree_constituents, tree_to_json

FIRST = "(TOP (S (NP (DT The) (NN ring)) (VP (VBD was) (VP (VBN held) (PP (IN by) (NP (NNP Frodo))))) (. .)))"
SECOND = "(TOP (S (VP (VB Go) (ADVP (RB away)) (. !))))"  # the root is a unary chain S -> VP
FIRST_CONSTITUENTS = [(0, 7, ("S",)), (0, 2, ("NP",)), (0, 1, ()), (1, 2, ()), (2, 6, ("VP",)), (2, 3, ()),
                      (3, 6, ("VP",)), (3, 4, ()), (4, 6, ("PP",)), (4, 5, ()), (5, 6, ("NP",)), (6, 7, ())]
SECOND_CONSTITUENTS = [(0, 3, ("S", "VP")), (0, 1, ()), (1, 2, ("ADVP",)), (2, 3, ())]


def parsed_doc(trees, tags=True, trailing_space=False):
    """A doc of the trees' sentences with the constituents the `bitcode_parser` component would store."""
    install_extensions()
    parsed = [Tree.fromstring(tree) for tree in trees]
    words = [word for tree in parsed for word in tree.leaves()]
    sent_starts = [i == 0 for tree in parsed for i in range(len(tree.leaves()))]
    pos = [tag for tree in parsed for _, tag in tree.pos()] if tags else None
    if trailing_space:
        words, sent_starts, pos = words + ["\n"], sent_starts + [False], (pos + ["_SP"] if tags else None)
    doc = Doc(spacy.blank("en").vocab, words=words, sent_starts=sent_starts, tags=pos)
    data = {"starts": [], "ends": [], "labels": []}
    offset = 0
    for tree in parsed:
        for start, end, labels in tree_constituents(tree_to_json(tree)):
            data["starts"].append(start + offset)
            data["ends"].append(end + offset)
            data["labels"].append(list(labels))
        offset += len(tree.leaves())
    doc._.bitcode_constituents = data
    return doc


def test_tree_constituents_preorder_with_unary_chains():
    assert tree_constituents(tree_to_json(Tree.fromstring(FIRST))) == FIRST_CONSTITUENTS
    assert tree_constituents(tree_to_json(Tree.fromstring(SECOND))) == SECOND_CONSTITUENTS
    # a root with several children is one constituent labelled (); a one-word tree is the word
    assert tree_constituents(tree_to_json(Tree.fromstring("(TOP (XX a) (XX b))"))) == [(0, 2, ()), (0, 1, ()),
                                                                                      (1, 2, ())]
    assert tree_constituents(tree_to_json(Tree.fromstring("(TOP (INTJ (UH Hi)))"))) == [(0, 1, ("INTJ",))]
    assert tree_constituents(tree_to_json(Tree("TOP", []))) == []


def test_sentence_values():
    doc = parsed_doc([FIRST, SECOND])
    first, second = doc.sents
    assert first._.parse_string == FIRST[len("(TOP "):-1]
    assert second._.parse_string == "(S (VP (VB Go) (ADVP (RB away)) (. !)))"
    assert first._.labels == ("S",) and second._.labels == ("S", "VP")
    assert first._.parent is None and second._.parent is None
    assert [c.text for c in first._.children] == ["The ring", "was held by Frodo", "."]
    assert [c.text for c in second._.children] == ["Go", "away", "!"]
    assert [(c.start, c.end, c._.labels) for c in first._.constituents] == FIRST_CONSTITUENTS
    assert [(c.start - 7, c.end - 7, c._.labels) for c in second._.constituents] == SECOND_CONSTITUENTS


def test_inner_spans_and_tokens():
    doc = parsed_doc([FIRST, SECOND])
    held_by_frodo = doc[3:6]
    assert held_by_frodo._.labels == ("VP",)
    assert held_by_frodo._.parse_string == "(VP (VBN held) (PP (IN by) (NP (NNP Frodo))))"
    assert held_by_frodo._.parent == doc[2:6] and doc[2:6]._.parent == doc[0:7]
    assert [c.text for c in held_by_frodo._.children] == ["held", "by Frodo"]
    assert [c.text for c in held_by_frodo._.constituents] == ["held by Frodo", "held", "by Frodo", "by", "Frodo"]
    frodo, away = doc[5], doc[8]
    assert frodo._.labels == ("NP",) and frodo._.parse_string == "(NP (NNP Frodo))" and frodo._.parent == doc[4:6]
    assert doc[0]._.labels == () and doc[0]._.parse_string == "(DT The)" and doc[0]._.parent == doc[0:2]
    assert away._.labels == ("ADVP",) and away._.parent == doc[7:10]  # the parent stays in its own sentence
    assert list(doc[5:6]._.children) == []
    for not_a_constituent in (doc[0:3], doc[1:3], doc[6:8]):
        with pytest.raises(NonConstituentException):
            not_a_constituent._.labels


def test_brackets_are_escaped_and_missing_tags_are_xx():
    unescaped = "(TOP (S (NP (PRP He) (-LRB- () (NNP Frodo) (-RRB- ))) (VP (VBD left))))"
    parsed = Tree("TOP", [Tree("S", [Tree("NP", [Tree("PRP", ["He"]), Tree("-LRB-", ["("]), Tree("NNP", ["Frodo"]),
                                                   Tree("-RRB-", [")"])]), Tree("VP", [Tree("VBD", ["left"])])])])
    assert ptb_escape("f(x)[1]{2}") == "f-LRB-x-RRB--LSB-1-RSB--LCB-2-RCB-"
    assert Tree.fromstring(unescaped).leaves() != ["He", "(", "Frodo", ")", "left"]  # why the escapes are needed
    install_extensions()
    words = ["He", "(", "Frodo", ")", "left"]
    for tags, expected in (
        (["PRP", "-LRB-", "NNP", "-RRB-", "VBD"],
         "(S (NP (PRP He) (-LRB- -LRB-) (NNP Frodo) (-RRB- -RRB-)) (VP (VBD left)))"),
        (None, "(S (NP (XX He) (XX -LRB-) (XX Frodo) (XX -RRB-)) (VP (XX left)))"),
    ):
        doc = Doc(spacy.blank("en").vocab, words=words, sent_starts=[True] + [False] * 4, tags=tags)
        constituents = tree_constituents(tree_to_json(parsed))
        doc._.bitcode_constituents = {"starts": [c[0] for c in constituents], "ends": [c[1] for c in constituents],
                                      "labels": [list(c[2]) for c in constituents]}
        sentence = next(iter(doc.sents))
        assert sentence._.parse_string == expected
        assert Tree.fromstring(expected).leaves() == ["He", "-LRB-", "Frodo", "-RRB-", "left"]


def test_whitespace_tokens_are_trimmed_and_unparsed_docs_raise():
    doc = parsed_doc([SECOND], trailing_space=True)
    sentence = next(iter(doc.sents))
    assert sentence.text.endswith("\n") and sentence._.labels == ("S", "VP")
    assert sentence._.parse_string == "(S (VP (VB Go) (ADVP (RB away)) (. !)))"
    assert doc[3:4]._.parse_string == "" and doc[3:4]._.labels == () and doc[3:4]._.parent is None
    install_extensions()
    with pytest.raises(ValueError, match="bitcode_parser"):
        spacy.blank("en")("no parse here")[0:2]._.parse_string
