"""The shared part of our predictors: a sentence or its tokens in; words and each word's code (hex and bits) out.

Subclasses (`hash_tagger`, `hash_parser`) add their task's output in `task_json`. Used by `allennlp predict` and by
the spaCy components (`bitcode_allennlp.spacy_components`), which call `predict_batch_json` with `{"tokens": ...}`.
Nothing here assumes a PLM or a hash layer: models without codes give no `codes` / `bits`.
"""
from typing import Any, Dict, List

from allennlp.common.util import JsonDict
from allennlp.data import DatasetReader, Instance
from allennlp.data.fields import TextField
from allennlp.data.tokenizers import SpacyTokenizer
from allennlp.models import Model
from allennlp.predictors.predictor import Predictor

from bitcode_allennlp.codes import hex_to_bits


class CodesPredictor(Predictor):
    """
    Input `{"sentence": "raw text"}` (tokenized by spaCy without a downloaded model: `spacy.blank`) or
    `{"tokens": ["pre", "tokenized"]}`; validation-stage models `{"codes": [...], "words": [...]}`. Output `words`, the task's output, and for models with codes `codes`
    (hex per word) and `bits` (K 0/1 values per word, bit i = head i). An input without words gets empty outputs
    without running the model.

    # Parameters

    model : `Model`
    dataset_reader : `DatasetReader`
        Its `text_to_instance(words)` builds the model's input.
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
        return self.instance(json_dict)

    def instance(self, json_dict: JsonDict, **kwargs) -> Instance:
        """The reader's instance of one input; a validation-stage model (reader `binary_codes`) reads
        `{"codes": ["a3f00c", ...], "words": [...]}` (words optional, for display only)."""
        if getattr(self._dataset_reader, "reads_codes", False):
            if "codes" not in json_dict:
                raise ValueError('a validation-stage model reads codes: expected {"codes": ["a3f00c", ...]} (and '
                                 f'optionally "words"), got keys {sorted(json_dict)}')
            return self._dataset_reader.text_to_instance(  # type: ignore
                [str(code) for code in json_dict["codes"]], words=json_dict.get("words"), **kwargs)
        return self._dataset_reader.text_to_instance(self.words(json_dict), **kwargs)  # type: ignore

    def predict_instance(self, instance: Instance) -> JsonDict:
        return self.predict_batch_instance([instance])[0]

    def predict_batch_instance(self, instances: List[Instance]) -> List[JsonDict]:
        """One `forward_on_instances` over the non-empty instances; empty ones get `empty_output()`."""
        full = [i for i, instance in enumerate(instances) if not self._is_empty(instance)]
        for i in full:
            self._dataset_reader.apply_token_indexers(instances[i])
        outputs = dict(zip(full, self._model.forward_on_instances([instances[i] for i in full]) if full else []))
        return [self.to_json(outputs[i] if i in outputs else self.empty_output()) for i in range(len(instances))]

    @staticmethod
    def _is_empty(instance: Instance) -> bool:
        return any(isinstance(field, TextField) and len(field) == 0 for field in instance.fields.values())

    def empty_output(self) -> Dict[str, Any]:
        """What `forward_on_instances` would give for a sentence of no words (subclasses add their keys)."""
        return {"words": [], "code_hex": []} if self._num_bits() is not None else {"words": []}

    def _num_bits(self):
        return getattr(self._model, "num_bits", None)

    def to_json(self, output: Dict[str, Any]) -> JsonDict:
        result: JsonDict = {"words": list(output["words"]), **self.task_json(output)}
        if "code_hex" in output:
            codes = list(output["code_hex"])
            num_bits = self._num_bits() or 4 * len(codes[0] if codes else "")
            result["codes"] = codes
            result["bits"] = [hex_to_bits(code, num_bits) for code in codes]
        return result

    def task_json(self, output: Dict[str, Any]) -> JsonDict:
        raise NotImplementedError
