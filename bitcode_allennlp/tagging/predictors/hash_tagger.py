"""Predictor for `hash_crf_tagger` archives (both stages): tags and per-word codes. Default of the tagger."""
from typing import Any, Dict

from allennlp.common.util import JsonDict
from allennlp.predictors.predictor import Predictor

from bitcode_allennlp.common.predictor import CodesPredictor


@Predictor.register("hash_tagger")
class HashTaggerPredictor(CodesPredictor):
    """
    `{"sentence": ...}` or `{"tokens": [...]}` → `words`, `tags` (POS or BIOUL NE tags), `codes`, `bits`.

    Registered as a `Predictor` with name "hash_tagger". Parameters as `CodesPredictor`.
    """

    def task_json(self, output: Dict[str, Any]) -> JsonDict:
        return {"tags": output["tags"]}
