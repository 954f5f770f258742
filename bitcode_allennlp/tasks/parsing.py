"""Constituency parsing (`ParseTask`, configs `parse_*.jsonnet`, spaCy `bitcode_parser`): the `hash_span_parser`
model, the `hash_parser` predictor (`"tree"`, `"tree_json"`), the `"tree"` gold field (`TREE`, `gold_tree`)."""
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from bitcode_allennlp.tasks.base import FIXTURES, Gold, Task

if TYPE_CHECKING:
    from nltk import Tree


def gold_tree(text: Any, words: List[str]) -> "Tree":
    """
    The gold tree of a line, checked: a PTB bracketed string, `TOP` removed, accepted by `check_tree` (the
    parser binarizes it), with exactly `words` as its leaves.

    # Raises

    `ValueError` naming what is wrong with `"tree"`.
    """
    from nltk import Tree

    from bitcode_allennlp.structs.trees import ROOT_LABEL, check_tree, tree_leaves

    if not isinstance(text, str):
        raise ValueError('"tree" must be a PTB bracketed string')
    try:
        tree = Tree.fromstring(text)
    except ValueError as bad:
        raise ValueError(f'"tree" is not a bracketed tree: {bad}') from None
    if tree.label() == ROOT_LABEL and len(tree) == 1 and isinstance(tree[0], Tree):
        tree = tree[0]
    try:
        check_tree(tree)
    except ValueError as bad:
        raise ValueError(f'"tree": {bad}') from None
    leaves = tree_leaves(tree)
    if leaves != words:
        raise ValueError(f'the words of "tree" are not "words" ({len(leaves)} vs {len(words)} words)')
    return tree


class TreeGold(Gold):
    """The codes line's `"tree"`: the gold tree as one-line PTB text (the parsers' readers keep it in the
    instance's metadata, `"gold_tree"`); a reader gets an `nltk.Tree` without `TOP` (`gold_tree`)."""

    key = "tree"
    attribute = "tree"
    what = "parsing"
    page_key = "tree"
    explorer = "parser"

    def from_instance(self, instance: Any) -> Optional[str]:
        return instance["metadata"].metadata.get("gold_tree")

    def check(self, value: Any, words: List[str]) -> "Tree":
        return gold_tree(value, words)


TREE = TreeGold()


class ParseTask(Task):
    """Constituency parsing: benepar's span extensions in spaCy (`doc._.bitcode_constituents`); the tags already
    on the tokens go into the trees (`"pos_tags"`)."""

    name = "parse"
    component = "parser"
    model_class = "HashSpanParser"
    model_type = "hash_span_parser"
    readers = ("ptb_spans",)
    metric = "evalb_f1"
    fixtures = (FIXTURES / "ptb/craft_train.tree", FIXTURES / "ptb/craft_dev.tree")
    predictor = "hash_parser"
    predictor_fields = ("tree", "tree_json")
    gold = TREE
    spacy_assigns = ("doc._.bitcode_constituents",)

    def spacy_input(self, doc: Any, words: List[int]) -> Dict[str, Any]:
        json = super().spacy_input(doc, words)
        tags = [doc[i].tag_ for i in words]
        if all(tags):
            json["pos_tags"] = tags
        return json

    def annotate(self, doc: Any, words: List[int], output: Any, pending: Dict[str, Any], who: str) -> None:
        from bitcode_allennlp.structs.trees import tree_constituents  # after the predictor: nltk is loaded

        if output.tree_json is None:
            raise ValueError(f"{who} is not a parser archive")
        data = pending.setdefault("constituents", {"starts": [], "ends": [], "labels": []})
        for start, end, labels in tree_constituents(output.tree_json):
            data["starts"].append(words[start])
            data["ends"].append(words[end - 1] + 1)
            data["labels"].append(list(labels))

    def finish(self, doc: Any, pending: Dict[str, Any]) -> None:
        doc._.bitcode_constituents = pending.get("constituents", {"starts": [], "ends": [], "labels": []})
