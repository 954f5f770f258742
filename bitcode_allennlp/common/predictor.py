"""The shared part of our predictors: a sentence or its tokens in; words and each word's code (hex and bits) out.

Subclasses (`hash_tagger`, `hash_parser`) add their task's output in `task_json`. Used by `allennlp predict`.
"""
from typing import Any, Dict, List

from allennlp.common.util import JsonDict
from allennlp.data import DatasetReader, Instance
from allennlp.data.tokenizers import SpacyTokenizer
from allennlp.models import Model
from allennlp.predictors.predictor import Predictor

from bitcode_allennlp.codes import hex_to_bits


class CodesPredictor(Predictor):
    """
    Input `{"sentence": "raw text"}` (tokenized by spaCy without a downloaded model: `spacy.blank`) or
    `{"tokens": ["pre", "tokenized"]}`. Output `words`, the task's output, and for hashing-stage models `codes`
    (hex per word) and `bits` (K 0/1 values per word, bit i = head i).

    # Parameters

    language : `str`, optional (default = `"blank:en"`)
        The spaCy pipeline that splits raw sentences (any installed model name, or `blank:<lang>`).
    """

    def __init__(self, model: Model, dataset_reader: DatasetReader, language: str = "blank:en") -> None:
        super().__init__(model, dataset_reader)
        self._tokenizer = SpacyTokenizer(language=language)

    def words(self, json_dict: JsonDict) -> List[str]:
        if "tokens" in json_dict:
            return [str(token) for token in json_dict["tokens"]]
        if "sentence" in json_dict:
            return [token.text for token in self._tokenizer.tokenize(json_dict["sentence"])]
        raise ValueError(f'expected {{"sentence": ...}} or {{"tokens": [...]}}, got keys {sorted(json_dict)}')

    def _json_to_instance(self, json_dict: JsonDict) -> Instance:
        return self._dataset_reader.text_to_instance(self.words(json_dict))  # type: ignore

    def predict_instance(self, instance: Instance) -> JsonDict:
        return self.predict_batch_instance([instance])[0]

    def predict_batch_instance(self, instances: List[Instance]) -> List[JsonDict]:
        for instance in instances:
            self._dataset_reader.apply_token_indexers(instance)
        return [self.to_json(output) for output in self._model.forward_on_instances(instances)]

    def to_json(self, output: Dict[str, Any]) -> JsonDict:
        result: JsonDict = {"words": output["words"], **self.task_json(output)}
        if "code_hex" in output:
            num_bits = self._model.num_bits  # type: ignore
            result["codes"] = output["code_hex"]
            result["bits"] = [hex_to_bits(code, num_bits) for code in output["code_hex"]]
        return result

    def task_json(self, output: Dict[str, Any]) -> JsonDict:
        raise NotImplementedError
