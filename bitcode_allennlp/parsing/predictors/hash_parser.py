"""Predictor for `hash_span_parser` archives: the tree (PTB string and nested JSON) and per-word codes."""
from typing import Any, Dict, Union

from allennlp.common.util import JsonDict
from allennlp.predictors.predictor import Predictor
from nltk import Tree

from bitcode_allennlp.common.predictor import CodesPredictor
from bitcode_allennlp.parsing.trees import ROOT_LABEL
from bitcode_allennlp.spacy_components.extensions import ptb_escape


def tree_to_json(tree: Union[Tree, str]) -> JsonDict:
    """`(NP (DT the) (NN ring))` → `{"label": "NP", "children": [{"label": "DT", "word": "the"}, ...]}`."""
    if isinstance(tree, str):
        return {"word": tree}
    if len(tree) == 1 and isinstance(tree[0], str):
        return {"label": tree.label(), "word": tree[0]}
    return {"label": tree.label(), "children": [tree_to_json(child) for child in tree]}


def tree_to_ptb(tree: Union[Tree, str]) -> str:
    """One-line PTB string; brackets in words and tags escaped (`(` → `-LRB-`, ...) so that it reads back."""
    if isinstance(tree, str):
        return ptb_escape(tree)
    return f"({ptb_escape(tree.label())} {' '.join(tree_to_ptb(child) for child in tree)})"


@Predictor.register("hash_parser")
class HashParserPredictor(CodesPredictor):
    """
    `{"sentence": ...}` or `{"tokens": [...]}` (optionally `"pos_tags": [...]`, placed in the tree; else `XX`) →
    `words`, `tree` (one-line PTB string under `TOP`, brackets escaped as `-LRB-` ...), `tree_json` (nested:
    `{"label", "children"}` for phrases, `{"label", "word"}` for parts of speech, words as given), `codes`, `bits`.

    Registered as a `Predictor` with name "hash_parser". Parameters as `CodesPredictor`.
    """

    def _json_to_instance(self, json_dict: JsonDict):
        return self.instance(json_dict, pos_tags=json_dict.get("pos_tags"))

    def empty_output(self) -> Dict[str, Any]:
        return {**super().empty_output(), "nltk_trees": Tree(ROOT_LABEL, [])}

    def task_json(self, output: Dict[str, Any]) -> JsonDict:
        tree = output["nltk_trees"]
        return {"tree": tree_to_ptb(tree), "tree_json": tree_to_json(tree)}
