"""Part-of-speech tagging (`PosTask`, configs `pos_*.jsonnet`, spaCy `bitcode_tagger`), and what every tagging
task shares (`TaggingTask`: the `hash_crf_tagger` model, the `hash_tagger` predictor, the `"tags"` gold field
`TAGS`)."""
from typing import Any, Dict, List, Optional

from bitcode_allennlp.tasks.base import FIXTURES, Gold, Task


class TagsGold(Gold):
    """The codes line's `"tags"`: one tag per word (taggers; a reader's `"tags"` field)."""

    key = "tags"
    attribute = "tags"
    what = "tagging"
    page_key = "t"

    def from_instance(self, instance: Any) -> Optional[List[str]]:
        if "tags" not in instance.fields:
            return None
        return list(instance["tags"].labels)

    def check(self, value: Any, words: List[str]) -> List[str]:
        if not (isinstance(value, list) and len(value) == len(words) and all(isinstance(tag, str) for tag in value)):
            raise ValueError(f'"tags" must be a list of {len(words)} strings, one per code')
        return value


TAGS = TagsGold()


class TaggingTask(Task):
    """A task of the hashing-stage CRF tagger (`hash_crf_tagger`, predictor `hash_tagger`, gold `"tags"`)."""

    model_class = "HashCrfTagger"
    model_type = "hash_crf_tagger"
    predictor = "hash_tagger"
    predictor_fields = ("tags",)
    gold = TAGS

    def fits(self, model: Any) -> bool:
        """A tagger; with a `label_encoding` (spans) when the task has `"entities"`, else without one."""
        spans = "entities" in self.predictor_fields
        return super().fits(model) and bool(getattr(model, "label_encoding", None)) == spans


class PosTask(TaggingTask):
    """Part-of-speech tagging: `token.tag_` in spaCy."""

    name = "pos"
    component = "tagger"
    readers = ("ptb_hash", "conllu_pos")
    metric = "accuracy"
    fixtures = (FIXTURES / "ptb/craft_train.tree", FIXTURES / "ptb/craft_dev.tree")
    spacy_assigns = ("token.tag",)

    def annotate(self, doc: Any, words: List[int], output: Any, pending: Dict[str, Any], who: str) -> None:
        if output.tags is None:
            raise ValueError(f"{who} is not a tagger")
        for i, tag in zip(words, output.tags):
            doc[i].tag_ = tag
