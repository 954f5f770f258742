"""Predictor for `hash_crf_tagger` archives: a sentence or its tokens in, tags and per-word codes out.

Used by `allennlp predict` (the tagger's default predictor) and the spaCy component.
"""
from typing import List

from allennlp.common.util import JsonDict
from allennlp.data import Instance
from allennlp.data.tokenizers import SpacyTokenizer
from allennlp.predictors.predictor import Predictor

from bitcode_allennlp.codes import hex_to_bits


@Predictor.register("hash_tagger")
class HashTaggerPredictor(Predictor):
    """
    Input `{"sentence": "raw text"}` (tokenized with a blank spaCy English tokenizer, no model download) or
    `{"tokens": ["pre", "tokenized"]}`. Output `words`, `tags` and, for hashing-stage models, `codes` (hex per
    word) and `bits` (K 0/1 values per word, bit i = head i).

    Registered as a `Predictor` with name "hash_tagger".
    """

    def __init__(self, model, dataset_reader, language: str = "blank:en") -> None:
        super().__init__(model, dataset_reader)
        self._tokenizer = SpacyTokenizer(language=language)

    def _json_to_instance(self, json_dict: JsonDict) -> Instance:
        if "tokens" in json_dict:
            words: List[str] = list(json_dict["tokens"])
        elif "sentence" in json_dict:
            words = [t.text for t in self._tokenizer.tokenize(json_dict["sentence"])]
        else:
            raise ValueError(f'expected {{"sentence": ...}} or {{"tokens": [...]}}, got keys {sorted(json_dict)}')
        return self._dataset_reader.text_to_instance(words)  # type: ignore

    def predict_instance(self, instance: Instance) -> JsonDict:
        return self.predict_batch_instance([instance])[0]

    def predict_batch_instance(self, instances: List[Instance]) -> List[JsonDict]:
        for instance in instances:
            self._dataset_reader.apply_token_indexers(instance)
        return [self._to_json(output) for output in self._model.forward_on_instances(instances)]

    def _to_json(self, output) -> JsonDict:
        result: JsonDict = {"words": output["words"], "tags": output["tags"]}
        if "code_hex" in output:
            num_bits = self._model.num_bits  # type: ignore
            result["codes"] = output["code_hex"]
            result["bits"] = [hex_to_bits(code, num_bits) for code in output["code_hex"]]
        return result
