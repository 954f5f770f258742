"""`binary_codes` DatasetReader: a codes corpus (`allennlp hash-corpus` output) → instances whose only model input
is the codes.

One JSON object per line:

    {"words": ["EU", "rejects"], "codes": ["a3f00c", "0b12ff"], "num_bits": 24, "tags": ["U-ORG", "O"],
     "source": "train.conll:12"}

with `"tags"` (taggers) or `"tree"` (parsers: the gold tree as one-line PTB text under `TOP`), or neither (no
gold). The `"tokens"` field holds the hex codes, indexed by `binary_code` (no vocabulary); the words go only to
the metadata (for printing trees and outputs), so the validation-stage model never sees them.
"""
from typing import Any, Dict, Iterator, Optional, Sequence, Tuple

from allennlp.common.checks import ConfigurationError
from allennlp.data import DatasetReader, Instance, Token
from allennlp.data.fields import Field, MetadataField, SequenceLabelField, TextField
from allennlp.data.token_indexers import TokenIndexer
from nltk import Tree

from bitcode_allennlp.common.codes_line import read_codes_line
from bitcode_allennlp.host.errors import DataFormatError
from bitcode_allennlp.data.dataset_readers.tagging_reader import TaggingDatasetReader, resolve_path
from bitcode_allennlp.common.text_lines import NumberedLine, numbered_lines
from bitcode_allennlp.parsing.dataset_readers.ptb_spans import span_fields
from bitcode_allennlp.structs.trees import ROOT_LABEL, tree_pos, tree_to_string
from bitcode_allennlp.code_stage.binary_code_indexer import BinaryCodeIndexer


@DatasetReader.register("binary_codes")
class BinaryCodesDatasetReader(TaggingDatasetReader):
    """
    Reads a codes corpus (JSON lines, see the module docstring) for the validation stage.

    Instances: `"tokens"` (a `TextField` of hex codes), `"metadata"` (`words`, `source`, and for trees `pos_tags`
    and `gold_tree`), and the gold annotation: `"tags"` (namespace `labels`) for a tagger, or `"spans"` and
    `"span_labels"` (namespace `span_labels`) as `ptb_spans` makes them (`span_fields`) for a parser.

    Registered as a `DatasetReader` with name "binary_codes".

    # Parameters

    num_bits : `int`
        K of the codes; a line with another `num_bits` is an error (train the validation model with the hashing
        model's K).
    token_indexers : `Dict[str, TokenIndexer]`, optional (default = `{"codes": BinaryCodeIndexer(num_bits)}`)
    skip_invalid : `bool`, optional (default = `False`)
        Skip malformed lines (one warning at the end) instead of raising `DataFormatError`.
    **kwargs
        `DatasetReader` arguments, e.g. `max_instances`.
    """

    reads_codes = True  # predictors send {"codes": [...]} (bitcode_allennlp.model.predictor)

    def __init__(
        self,
        num_bits: int,
        token_indexers: Optional[Dict[str, TokenIndexer]] = None,
        skip_invalid: bool = False,
        **kwargs,
    ) -> None:
        super().__init__(token_indexers=token_indexers or {"codes": BinaryCodeIndexer(num_bits)},
                         skip_invalid=skip_invalid, **kwargs)
        self.num_bits = num_bits

    def _sentence_items(self, file_path: str) -> Iterator[object]:
        path = resolve_path(file_path)
        empty = True
        for line in numbered_lines(path):
            if line.error is not None:
                yield line.error
            elif line.text.strip():
                empty = False
                yield path, line
        if empty:
            raise DataFormatError(path, 1, "empty codes file (expected one JSON object per line)")

    def _parse_item(self, item: Tuple[str, NumberedLine]) -> Dict[str, Any]:  # type: ignore[override]
        """One line → `codes` (hex, as written), `words`, `source`, and `tags` or `tree` (an `nltk.Tree` without
        `TOP`) if given, checked by `bitcode_allennlp.common.codes_line` (shared with `allennlp bits`)."""
        path, line = item
        parsed = read_codes_line(path, line.number, line.text, self.num_bits, fixed=True)
        sentence: Dict[str, Any] = {"codes": parsed.record["codes"], "words": parsed.words,
                                    "source": parsed.source or f"{path}:{line.number}"}
        if parsed.tags is not None:
            sentence["tags"] = parsed.tags
        if parsed.tree is not None:
            sentence["tree"] = parsed.tree
        return sentence

    def _instance(self, parsed: Dict[str, Any]) -> Instance:  # type: ignore[override]
        return self.text_to_instance(parsed["codes"], words=parsed["words"], tags=parsed.get("tags"),
                                     tree=parsed.get("tree"), source=parsed["source"])

    def text_to_instance(  # type: ignore[override]
        self,
        codes: Sequence[str],
        words: Optional[Sequence[str]] = None,
        tags: Optional[Sequence[str]] = None,
        tree: Optional[Tree] = None,
        source: Optional[str] = None,
        pos_tags: Optional[Sequence[str]] = None,
    ) -> Instance:
        """
        An instance of one sentence's hex codes; `words` (metadata only), gold `tags` or `tree` optional;
        `pos_tags` (metadata, for the trees a parser builds) default to the gold tree's.
        """
        words = list(words) if words is not None else list(codes)
        if len(words) != len(codes):
            raise ConfigurationError(f"{len(words)} words for {len(codes)} codes")
        text_field = TextField([Token(code) for code in codes])
        fields: Dict[str, Field] = {"tokens": text_field}
        metadata: Dict[str, Any] = {"words": words, "source": source}
        if tags is not None:
            if len(tags) != len(codes):
                raise ConfigurationError(f"{len(tags)} tags for {len(codes)} codes")
            fields["tags"] = SequenceLabelField(list(tags), text_field, label_namespace="labels")
        if tree is not None:
            fields.update(span_fields(tree, text_field))
            metadata["pos_tags"] = [tag for _, tag in tree_pos(tree)]
            metadata["gold_tree"] = tree_to_string(Tree(ROOT_LABEL, [tree]))
        if pos_tags is not None:
            if len(pos_tags) != len(codes):
                raise ConfigurationError(f"{len(pos_tags)} part-of-speech tags for {len(codes)} codes")
            metadata["pos_tags"] = list(pos_tags)
        fields["metadata"] = MetadataField(metadata)
        return Instance(fields)
