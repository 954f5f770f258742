"""The `ptb_spans` reader: Penn Treebank bracketed trees as words plus the labelled spans of their binarized form.

Where this sits: it feeds the CRF constituency parser of both stages. Scanning, parsing and cleaning trees are
`bitcode_allennlp.structs.trees` (same errors and options as `ptb_hash`), binarizing them
`bitcode_allennlp.structs.binarization`; `span_fields` makes the
`"spans"` and `"span_labels"` fields of a tree, here and in the validation stage's `binary_codes` reader. The
parser turns a batch of them into its (n + 1) x (n + 1) target chart with `gold_chart` (`bitcode_allennlp.structs`,
re-exported here).
"""
import logging
from typing import Dict, NamedTuple, Optional, Sequence, Tuple, Union

from allennlp.common.checks import ConfigurationError
from allennlp.data.dataset_readers.dataset_reader import DatasetReader
from allennlp.data.fields import Field, ListField, MetadataField, SequenceLabelField, SpanField, TextField
from allennlp.data.instance import Instance
from allennlp.data.token_indexers import TokenIndexer
from allennlp.data.tokenizers import Token
from nltk import Tree

from bitcode_allennlp.host.errors import DataFormatError
from bitcode_allennlp.data.dataset_readers.ptb_trees import PtbHashDatasetReader
from bitcode_allennlp.data.dataset_readers.tagging_reader import apply_token_policy
from bitcode_allennlp.structs.binarization import binarize, factorize
from bitcode_allennlp.structs.trees import (
    MARK,
    ROOT_LABEL,
    RawTree,
    check_tree,
    clean_tree,
    leaf_slots,
    parse_tree,
    tree_leaves,
    tree_pos,
    tree_to_string,
    word_lines,
)

logger = logging.getLogger(__name__)

SPAN_LABEL_NAMESPACE = "span_labels"
POS_TAG_NAMESPACE = "pos_tags"
"""The namespace of the gold POS tags of the `"tags"` field (`tag_field: true`); ends in `tags`: no padding or OOV."""


class GoldSpanLabelField(SequenceLabelField):
    """
    The gold span labels of a tree. A label the model never saw (a new phrase label at `allennlp evaluate`) is read
    as the model's first "no constituent" label (`P|<>`) for the loss, with one warning per label; EVALB scores the
    gold tree itself, so that bracket is simply a miss.
    """

    _warned: set = set()

    def index(self, vocab) -> None:
        known = vocab.get_token_to_index_vocabulary(self._label_namespace)
        unseen = [label for label in self.labels if isinstance(label, str) and label not in known]
        if unseen and known:
            stand_in = next((label for label in known if label.endswith(MARK)), next(iter(known)))
            for label in unseen:
                if label not in self._warned:
                    self._warned.add(label)
                    logger.warning("span label %r is not one of the model's: the loss reads it as %r, EVALB counts "
                                   "its bracket as a miss", label, stand_in)
            self.labels = [stand_in if label in unseen else label for label in self.labels]
        super().index(vocab)


def span_fields(tree: Tree, text_field: TextField) -> Dict[str, Field]:
    """
    The gold fields of a cleaned `tree` over the words of `text_field`: `"spans"`, a `ListField[SpanField]` of the
    2n - 1 spans of the binarized tree in preorder (inclusive ends: fencepost span (i, j) is `SpanField(i, j - 1)`),
    the first the whole sentence, and `"span_labels"`, their labels (`NP`, `S+VP`, `NP|<>`, see
    `bitcode_allennlp.structs.binarization`) in the `"span_labels"` namespace.
    """
    spans = factorize(binarize(tree))
    spans_field = ListField([SpanField(start, end - 1, text_field) for start, end, _ in spans])
    return {
        "spans": spans_field,
        "span_labels": GoldSpanLabelField([label for _, _, label in spans], spans_field,
                                          label_namespace=SPAN_LABEL_NAMESPACE),
    }


class ParsedTree(NamedTuple):
    """A cleaned tree (words already through the token policy) and `"<file>:<line>"` where it starts."""

    tree: Tree
    source: str


@DatasetReader.register("ptb_spans")
class PtbSpansDatasetReader(PtbHashDatasetReader):
    """
    Reads Penn Treebank bracketed trees for constituency parsing: one tree per line (CRAFT's `craft-*.tree`) or
    multi-line `.mrg` trees, or a directory of `*.mrg` files (recursively, sorted). Trees are cleaned as by
    `ptb_hash`: `-NONE-` traces and the constituents they leave empty are removed, root wrappers (`TOP`, `ROOT`,
    `VROOT`, an unlabelled outer bracket) are dropped, and function tags and indices are stripped (`NP-SBJ-1` ->
    `NP`). Other roots (CRAFT's `TITLE`, `HEADING`, `CAPTION`) are ordinary phrases. Errors are those of
    `ptb_hash` (`DataFormatError` naming file and line); a phrase label containing `+` or ending in `|<>` is one
    too, since binarization reserves them.

    Instances have
    - `"tokens"`: `TextField` of the words;
    - `"spans"`: `ListField[SpanField]`, the 2n - 1 spans of the binarized gold tree in preorder (inclusive
      ends: fencepost span (i, j) is `SpanField(i, j - 1)`), the first the whole sentence;
    - `"span_labels"`: `SequenceLabelField` over `"spans"` in the `"span_labels"` namespace, labels as in
      `bitcode_allennlp.structs.binarization` (`NP`, `S+VP`, `NP|<>`) (both from `span_fields`); `gold_chart` makes
      the target chart of a batch;
    - `"metadata"`: `{"words", "pos_tags", "gold_tree", "source"}`, `gold_tree` the cleaned tree under a `TOP`
      root as one-line PTB text, the form `build` returns and `evalb_f1` compares (`None` without gold).

    - `"tags"` (only with `tag_field: true`): `SequenceLabelField` over `"tokens"`, the gold tree's POS tags (its
      preterminals) in the `"pos_tags"` namespace, for the parser's code-reading head.

    `"spans"`, `"span_labels"` and `"tags"` are there only with a gold tree.

    # Parameters

    token_indexers : `Dict[str, TokenIndexer]`, optional (default = `{"tokens": SingleIdTokenIndexer()}`)
    token_policy : `str`, optional (default = `"strict"`)
        As in `ptb_hash`: `"repair"` writes Unicode whitespace inside a word as `"_"`; CRAFT needs it.
    skip_invalid : `bool`, optional (default = `False`)
        Skip malformed trees (one warning at the end) instead of raising `DataFormatError`.
    max_words : `int`, optional (default = `None`)
        A longer tree is malformed; `None`: 2,000 words (`text_checks.DEFAULT_MAX_WORDS`).
    tag_field : `bool`, optional (default = `False`)
        Also give instances with a gold tree the `"tags"` field (the POS tags of its preterminals), which the parser's
        code-reading head is trained on (config variable `CODE_HEAD` > 0 sets it). Off: instances as without it.
    **kwargs
        `DatasetReader` arguments, e.g. `max_instances`.

    The other parameters are `ptb_hash`'s, `TaggingDatasetReader`'s.
    """

    def __init__(
        self,
        token_indexers: Optional[Dict[str, TokenIndexer]] = None,
        token_policy: str = "strict",
        skip_invalid: bool = False,
        max_words: Optional[int] = None,
        tag_field: bool = False,
        **kwargs,
    ) -> None:
        super().__init__(token_indexers, token_policy, skip_invalid, max_words, **kwargs)
        self.tag_field = tag_field

    def _parse_item(self, item: Tuple[str, RawTree]) -> ParsedTree:  # type: ignore[override]
        path, raw = item
        tree = clean_tree(path, raw.line, parse_tree(path, raw))
        words, tags = zip(*tree_pos(tree))
        fixed, _, _ = apply_token_policy(path, self._token_policy, words, tags, word_lines(raw))
        if len(fixed) != len(words):
            raise DataFormatError(path, raw.line, "token_policy='repair' would drop an empty word from the tree")
        for (parent, index), word in zip(list(leaf_slots(tree)), fixed):
            parent[index] = word
        try:
            check_tree(tree)
        except ValueError as error:
            raise DataFormatError(path, raw.line, str(error)) from None
        return ParsedTree(tree, f"{path}:{raw.line}")

    @staticmethod
    def _num_words(parsed: ParsedTree) -> int:  # type: ignore[override]
        return len(tree_leaves(parsed.tree))  # an explicit stack: trees 2,000 levels deep

    def _instance(self, parsed: ParsedTree) -> Instance:  # type: ignore[override]
        return self.text_to_instance(tree_leaves(parsed.tree), gold_tree=parsed.tree, source=parsed.source)

    def text_to_instance(  # type: ignore[override]
        self,
        tokens: Sequence[Union[str, Token]],
        pos_tags: Optional[Sequence[str]] = None,
        gold_tree: Optional[Tree] = None,
        source: Optional[str] = None,
    ) -> Instance:
        """
        An instance for pre-tokenized words. `pos_tags` (optional) go to the metadata, for `build`; `gold_tree` is
        a cleaned tree as `clean_tree` returns it, whose words must be `tokens` (its tags are the default
        `pos_tags`). `source` is where the sentence comes from (`None` outside files).
        """
        tokens = [token if isinstance(token, Token) else Token(token) for token in tokens]
        words = [token.text for token in tokens]
        if pos_tags is not None and len(pos_tags) != len(words):
            raise ConfigurationError(f"{len(pos_tags)} part-of-speech tags for {len(words)} tokens")
        text_field = TextField(tokens)
        fields: Dict[str, Field] = {"tokens": text_field}
        gold_text = None
        if gold_tree is not None:
            gold_pos = tree_pos(gold_tree)
            if [word for word, _ in gold_pos] != words:
                raise ConfigurationError(f"the gold tree's words {[word for word, _ in gold_pos]} are not the tokens "
                                         f"{words}")
            if pos_tags is None:
                pos_tags = [tag for _, tag in gold_pos]
            fields.update(span_fields(gold_tree, text_field))
            if self.tag_field:
                fields["tags"] = SequenceLabelField([tag for _, tag in gold_pos], text_field,
                                                    label_namespace=POS_TAG_NAMESPACE)
            gold_text = tree_to_string(Tree(ROOT_LABEL, [gold_tree]))
        fields["metadata"] = MetadataField({
            "words": words,
            "pos_tags": None if pos_tags is None else list(pos_tags),
            "gold_tree": gold_text,
            "source": source,
        })
        return Instance(fields)
