"""The shared part of our predictors: a sentence or its tokens in; words and each word's code (hex and bits) out.

Subclasses (`hash_tagger`, `hash_parser`) add their task's output in `task_json`. Used by `allennlp predict` and by
the spaCy components (`bitcode_allennlp.spacy_components`), which call `predict_batch_json` with `{"tokens": ...}`.
Nothing here assumes a PLM or a hash layer: models without codes give no `codes` / `bits`.
"""
import json
from typing import Any, Dict, List

from allennlp.common.util import JsonDict
from allennlp.data import DatasetReader, Instance
from allennlp.data.fields import TextField
from allennlp.data.tokenizers import SpacyTokenizer
from allennlp.models import Model
from allennlp.predictors.predictor import Predictor

from bitcode_allennlp.common.code_value import Codes, HexCodeError
from bitcode_allennlp.common.text_checks import MAX_SENTENCE_CHARACTERS, length_problem, unicode_problem


def _json_type(value: Any) -> str:
    """The JSON name of a parsed value's type, with its article: "a string", "a number", "an object", ..."""
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    names = {str: "a string", int: "a number", float: "a number", list: "an array", dict: "an object"}
    return names.get(type(value), f"a {type(value).__name__}")


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def _describe(json_dict: Dict[str, Any], key: str) -> str:
    return f"keys {sorted(json_dict)}" if key not in json_dict else f'"{key}" as {_json_type(json_dict[key])}'


class CodesPredictor(Predictor):
    """
    Input `{"sentence": "raw text"}` (tokenized by spaCy without a downloaded model: `spacy.blank`) or
    `{"tokens": ["pre", "tokenized"]}`; validation-stage models `{"codes": [...], "words": [...]}`. Output `words`,
    the task's output, and for models with codes `codes` (hex per word) and `bits` (K 0/1 values per word, bit i =
    head i). An input without words gets empty outputs without running the model. A malformed input raises
    `ValueError` naming the field (`check_input`): tokens must be non-blank strings, codes strict K-bit hex.

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

    def check_input(self, json_dict: Any) -> None:
        """
        Raises `ValueError` naming the field for an input this predictor cannot read: not an object; `"tokens"`
        not a list, a token that is not a string, empty or only whitespace (the readers reject those too);
        `"sentence"` not a string; `"codes"` not a list of hex codes of the model's K (`Codes.from_hex`, strict);
        `"words"` not one string per code; both `"sentence"` and `"tokens"`; text that is not valid Unicode (a lone
        surrogate), a sentence over the reader's `max_words` or over `MAX_SENTENCE_CHARACTERS`
        (`bitcode_allennlp.common.text_checks`). `allennlp predict` calls it for every input line before predicting
        (`bitcode_allennlp.host.bad_input`); `instance` calls it for every input.
        """
        if not isinstance(json_dict, dict):
            raise ValueError(f"expected a JSON object, got {_json_type(json_dict)}")
        if getattr(self._dataset_reader, "reads_codes", False):
            codes = json_dict.get("codes")
            if not isinstance(codes, list):
                raise ValueError('a validation-stage model reads codes: expected {"codes": ["a3f00c", ...]} (and '
                                 f'optionally "words"), got {_describe(json_dict, "codes")}')
            num_bits = getattr(self._dataset_reader, "num_bits", None) or self._num_bits()
            try:
                Codes.from_hex(codes, num_bits)
            except HexCodeError as error:
                raise ValueError(f'"codes"[{error.index}]: {error.reason}') from None
            words = json_dict.get("words")
            if words is not None and (not isinstance(words, list) or len(words) != len(codes)
                                      or not all(isinstance(word, str) for word in words)):
                raise ValueError(f'"words" must be a list of {len(codes)} strings, one per code')
            for index, word in enumerate(words or []):
                if unicode_problem(word):
                    raise ValueError(f'"words"[{index}] {unicode_problem(word)}')
            return
        if "tokens" in json_dict and "sentence" in json_dict:
            raise ValueError('give either "sentence" (raw text) or "tokens" (its words), not both')
        if "tokens" in json_dict:
            tokens = json_dict["tokens"]
            if not isinstance(tokens, list):
                raise ValueError(f'"tokens" must be a list of strings, got {_json_type(tokens)} {_short(tokens)}')
            for index, token in enumerate(tokens):
                if not isinstance(token, str):
                    raise ValueError(f'"tokens"[{index}] is {_json_type(token)} {_short(token)}, expected a string')
                if not token.strip():
                    raise ValueError(f'"tokens"[{index}] {token!r} is ' + ("empty" if not token else "only whitespace"))
                if unicode_problem(token):
                    raise ValueError(f'"tokens"[{index}] {unicode_problem(token)}')
            self._check_length(len(tokens), '"tokens"')
        elif "sentence" in json_dict:
            sentence = json_dict["sentence"]
            if not isinstance(sentence, str):
                raise ValueError(f'"sentence" must be a string, got {_json_type(sentence)}')
            if unicode_problem(sentence):
                raise ValueError(f'"sentence" {unicode_problem(sentence)}')
            if len(sentence) > MAX_SENTENCE_CHARACTERS:
                raise ValueError(f'"sentence" has {len(sentence):,} characters, over the limit of '
                                 f'{MAX_SENTENCE_CHARACTERS:,}; split it into sentences')
            # a sentence has no more words than characters: split it only when it could be over the limit
            if len(sentence) > (getattr(self._dataset_reader, "max_words", None) or len(sentence)):
                self._check_length(len(self._tokenizer.tokenize(sentence)), '"sentence"')
        else:
            raise ValueError(f'expected {{"sentence": ...}} or {{"tokens": [...]}}, got keys {sorted(json_dict)}')

    def _check_length(self, num_words: int, field: str) -> None:
        """`ValueError` for a sentence over the reader's `max_words` (`bitcode_allennlp.common.text_checks`)."""
        problem = length_problem(num_words, getattr(self._dataset_reader, "max_words", None))
        if problem is not None:
            raise ValueError(f"{field}: {problem}")

    def words(self, json_dict: JsonDict) -> List[str]:
        self.check_input(json_dict)
        if "tokens" in json_dict:
            return list(json_dict["tokens"])
        return [token.text for token in self._tokenizer.tokenize(json_dict["sentence"])]

    def _json_to_instance(self, json_dict: JsonDict) -> Instance:
        return self.instance(json_dict)

    def instance(self, json_dict: JsonDict, **kwargs) -> Instance:
        """The reader's instance of one input (checked by `check_input`); a validation-stage model (reader
        `binary_codes`) reads `{"codes": ["a3f00c", ...], "words": [...]}` (words optional, for display only)."""
        if getattr(self._dataset_reader, "reads_codes", False):
            self.check_input(json_dict)
            return self._dataset_reader.text_to_instance(  # type: ignore
                list(json_dict["codes"]), words=json_dict.get("words"), **kwargs)
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
            result["codes"] = list(output["code_hex"])
            result["bits"] = self._code_value(output).bit_lists  # from the packed codes, not back from hex
        return result

    def _code_value(self, output: Dict[str, Any]) -> Codes:
        """One sentence's `Codes` from the model's packed `codes` (padded: the first `len(code_hex)` are its
        words'); without them (`empty_output`) the hex codes parsed."""
        if "codes" not in output:
            return Codes.from_hex(list(output["code_hex"]), self._num_bits())  # (words,)
        return Codes(output["codes"][: len(output["code_hex"])], self._num_bits())  # (words,)

    def task_json(self, output: Dict[str, Any]) -> JsonDict:
        raise NotImplementedError
