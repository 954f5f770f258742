"""Named-entity recognition (`NerTask`, configs `ner_*.jsonnet`, spaCy `bitcode_ner`): a tagger with a
`label_encoding`, whose predictor also gives the `"entities"`."""
from typing import Any, Dict, List

from bitcode_allennlp.tasks.base import FIXTURES
from bitcode_allennlp.tasks.tagging import TaggingTask


class SpanTaggingTask(TaggingTask):
    """A tagger of spans (BIOUL tags, `"entities"`): `doc.ents` in spaCy."""

    metric = "f1-measure-overall"
    predictor_fields = ("tags", "entities")
    spacy_assigns = ("doc.ents", "token.ent_iob", "token.ent_type")

    def annotate(self, doc: Any, words: List[int], output: Any, pending: Dict[str, Any], who: str) -> None:
        from spacy.tokens import Span

        if output.entities is None:
            raise ValueError(f"{who} is not a tagger with a label_encoding (BIOUL, BIO, ...); use 'bitcode_tagger' "
                             "for tags")
        pending.setdefault("entities", []).extend(
            Span(doc, words[e["start"]], words[e["end"] - 1] + 1, label=e["label"]) for e in output.entities)

    def finish(self, doc: Any, pending: Dict[str, Any]) -> None:
        doc.set_ents(pending.get("entities", []), default="outside")


class NerTask(SpanTaggingTask):
    """Named entities."""

    name = "ner"
    component = "ner"
    readers = ("ontonotes_hash", "conll_columns")
    fixtures = (FIXTURES / "conll2012/train", FIXTURES / "conll2012/development")
