"""Predictor for `hash_span_parser` archives: the tree (PTB string and nested JSON) and per-word codes.

Trees can be as deep as their sentences are long (a parser may predict a chain): the tree is written with the
depth-safe `tree_to_ptb` and `tree_to_json` of `bitcode_allennlp.structs.trees` (re-exported here), and `dump_line`
writes the JSON line with `json_line`, which nests without recursion: `json.dumps` recurses twice per tree level
(dict, children list) and raises `RecursionError` past ~450 levels.
"""
import json
from typing import Any, Dict, List, Tuple

from allennlp.common.util import JsonDict
from allennlp.predictors.predictor import Predictor
from nltk import Tree

from bitcode_allennlp.model.predictor import CodesPredictor
from bitcode_allennlp.structs.trees import ROOT_LABEL, tree_to_json, tree_to_ptb


def json_line(value: Any) -> str:
    """`json.dumps(value)` (default separators, ASCII) for dicts, lists and JSON scalars nested to any depth."""
    parts: List[str] = []
    stack: List[Tuple[bool, Any]] = [(False, value)]  # (True, literal text) or (False, a value to write)
    while stack:
        literal, item = stack.pop()
        if literal:
            parts.append(item)
        elif isinstance(item, dict):
            parts.append("{")
            stack.append((True, "}"))
            entries = list(item.items())
            for position in range(len(entries) - 1, -1, -1):
                key, entry = entries[position]
                stack.append((False, entry))
                key = key if isinstance(key, str) else json.dumps(key)  # as json.dumps writes 1, true, null keys
                stack.append((True, ("" if position == 0 else ", ") + json.dumps(key) + ": "))
        elif isinstance(item, (list, tuple)):
            parts.append("[")
            stack.append((True, "]"))
            for position in range(len(item) - 1, -1, -1):
                stack.append((False, item[position]))
                if position:
                    stack.append((True, ", "))
        else:
            parts.append(json.dumps(item))
    return "".join(parts)


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

    def dump_line(self, outputs: JsonDict) -> str:
        return json_line(outputs) + "\n"
