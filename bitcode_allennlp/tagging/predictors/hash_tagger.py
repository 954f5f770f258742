"""Predictor for `hash_crf_tagger` archives (both stages): tags, entity spans, per-word codes. The tagger's default."""
from typing import Any, Dict, List, Optional

from allennlp.common.util import JsonDict
from allennlp.data.dataset_readers.dataset_utils import span_utils
from allennlp.predictors.predictor import Predictor

from bitcode_allennlp.model.predictor import CodesPredictor

SPAN_DECODERS = {
    "BIOUL": span_utils.bioul_tags_to_spans,
    "BIO": span_utils.bio_tags_to_spans,
    "IOB1": span_utils.iob1_tags_to_spans,
    "BMES": span_utils.bmes_tags_to_spans,
}


def tags_to_entities(words: List[str], tags: List[str], label_encoding: str) -> List[JsonDict]:
    """`[{"label", "start", "end", "text"}]` in order; word indices, `end` exclusive; `text` the words joined by " "."""
    spans = SPAN_DECODERS[label_encoding](list(tags))
    return [{"label": label, "start": start, "end": end + 1, "text": " ".join(words[start : end + 1])}
            for label, (start, end) in sorted(spans, key=lambda span: span[1])]


@Predictor.register("hash_tagger")
class HashTaggerPredictor(CodesPredictor):
    """
    `{"sentence": ...}` or `{"tokens": [...]}` → `words`, `tags` (POS or NE tags), for taggers with a
    `label_encoding` (BIOUL, BIO, IOB1, BMES) `entities` (`[{"label", "start", "end", "text"}]`, `end`
    exclusive), `codes`, `bits`.

    Registered as a `Predictor` with name "hash_tagger". Parameters as `CodesPredictor`.
    """

    def _label_encoding(self) -> Optional[str]:
        encoding = getattr(self._model, "label_encoding", None)
        return encoding if encoding in SPAN_DECODERS else None

    def empty_output(self) -> Dict[str, Any]:
        return {**super().empty_output(), "tags": []}

    def task_json(self, output: Dict[str, Any]) -> JsonDict:
        result: JsonDict = {"tags": list(output["tags"])}
        encoding = self._label_encoding()
        if encoding is not None:
            result["entities"] = tags_to_entities(list(output["words"]), result["tags"], encoding)
        return result
