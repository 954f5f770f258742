"""Reader for CoNLL-2003-style column files (token ... tag), for the NER tagging stage.

Where this sits: `conll_columns` feeds the hashing-stage tagger (and the re-annotation of a corpus) with words and
NER tags recoded to BIOUL, e.g. the Broad Twitter Corpus `btc.{train,dev}.conll`.
"""
import logging
from typing import Dict, Iterator, List, Optional

from allennlp.common.checks import ConfigurationError
from allennlp.data.dataset_readers.dataset_reader import DatasetReader
from allennlp.data.token_indexers import TokenIndexer

from bitcode_allennlp.host.errors import DataFormatError
from bitcode_allennlp.data.dataset_readers.tag_coding import (
    INPUT_SCHEMES,
    OUTPUT_SCHEMES,
    TagSequenceError,
    spans_to_tags,
    tags_to_spans,
)
from bitcode_allennlp.data.dataset_readers.tagging_reader import (
    Sentence,
    TaggingDatasetReader,
    check_row_width,
    file_blocks,
    resolve_path,
    split_columns,
)
from bitcode_allennlp.common.text_lines import NumberedLine
from bitcode_allennlp.common.checks import check_choice

logger = logging.getLogger(__name__)

DOCSTART = "-DOCSTART-"


def _is_iob1(tags: List[str]) -> bool:
    """Whether `tags` decode as IOB1 (tags with stray white space never: 'I-PER ' after 'B-PER' is a typo, not IOB1)."""
    if any(tag != tag.strip() for tag in tags):
        return False
    try:
        tags_to_spans(tags, "IOB1")
    except TagSequenceError:
        return False
    return True


@DatasetReader.register("conll_columns")
class ConllColumnsDatasetReader(TaggingDatasetReader):
    """
    Reads CoNLL-2003-style files: one token per line with its columns, a blank line between sentences, and
    `-DOCSTART-` lines (document boundaries) skipped. Tags are decoded strictly in `input_scheme` and recoded in
    `coding_scheme`. Instances: `"tokens"`, `"tags"` (namespace `"labels"`) and `"metadata"`
    (`{"words", "source"}`).

    Token policy: by default (`"strict"`) an empty token or one containing whitespace is a `DataFormatError`.
    `"repair"` strips surrounding whitespace, writes each whitespace character inside a token as `"_"` and
    drops tokens that are empty after stripping if they are tagged `O` (an empty entity token still raises); a
    sentence left without tokens is dropped with a warning. Tags are checked before tokens are dropped. This is
    what the CoNLL-2012 release of the Broad Twitter Corpus did, so both versions give the same sentences and
    words (up to its PTB escapes of standalone brackets, `-LRB-` for `(` etc.).

    # Parameters

    token_indexers : `Dict[str, TokenIndexer]`, optional (default = `{"tokens": SingleIdTokenIndexer()}`)
    token_column : `int`, optional (default = `0`)
        Index of the token column (negative counts from the end).
    tag_column : `int`, optional (default = `-1`)
        Index of the tag column (negative counts from the end).
    delimiter : `Optional[str]`, optional (default = `None`)
        Column separator. `None`: TAB if the line contains one, else runs of ASCII spaces (so tab-separated files
        may have tokens with spaces in them, which the token policy then judges). A string: split on exactly it.
        All rows of a sentence must have the same number of columns.
    input_scheme : `str`, optional (default = `"IOB2"`)
        Tag scheme of the file: `"IOB2"` (also accepted as `"BIO"`), `"IOB1"` (the original CoNLL-2003 release:
        `I-X` starts a span, `B-X` only one that directly follows another `X` span), `"BIOUL"` or `"BIOES"`
        (BIOUL written with `E-`/`S-`). An IOB2 error in a sentence that is valid IOB1 says so and suggests
        `input_scheme="IOB1"`.
    coding_scheme : `str`, optional (default = `"BIOUL"`)
        Tag scheme of the instances: `"BIOUL"` or `"BIO"`.
    repair_iob : `bool`, optional (default = `False`)
        With IOB2 input, an `I-X` that does not continue an `X` span is an error; with this option it becomes
        `B-X` and a warning names the file and line.
    token_policy : `str`, optional (default = `"strict"`)
        `"strict"` or `"repair"`, see above.
    skip_invalid : `bool`, optional (default = `False`)
        Skip malformed sentences (one warning at the end) instead of raising `DataFormatError`.
    """

    def __init__(
        self,
        token_indexers: Optional[Dict[str, TokenIndexer]] = None,
        token_column: int = 0,
        tag_column: int = -1,
        delimiter: Optional[str] = None,
        input_scheme: str = "IOB2",
        coding_scheme: str = "BIOUL",
        repair_iob: bool = False,
        token_policy: str = "strict",
        skip_invalid: bool = False,
        **kwargs,
    ) -> None:
        super().__init__(token_indexers=token_indexers, token_policy=token_policy, skip_invalid=skip_invalid, **kwargs)
        check_choice("input_scheme", input_scheme, INPUT_SCHEMES)
        check_choice("coding_scheme", coding_scheme, OUTPUT_SCHEMES)
        if delimiter == "":
            raise ConfigurationError("delimiter must be None (auto) or a non-empty string")
        if token_column == tag_column:
            raise ConfigurationError(f"token_column and tag_column are both {token_column}")
        self._token_column = token_column
        self._tag_column = tag_column
        self._delimiter = delimiter
        self._input_scheme = input_scheme
        self._coding_scheme = coding_scheme
        self._repair_iob = repair_iob

    def _sentence_items(self, file_path: str) -> Iterator[object]:
        return file_blocks(resolve_path(file_path), lambda text: not text.strip() or text.lstrip().startswith(DOCSTART))

    def _parse_item(self, item) -> Optional[Sentence]:
        path, block = item
        block: List[NumberedLine]
        words, tags, lines = [], [], []
        width = None
        for line in block:
            if line.error is not None:
                raise line.error
            columns = split_columns(line.text, self._delimiter)
            token_index = self._token_column % len(columns) if self._token_column < 0 else self._token_column
            tag_index = self._tag_column % len(columns) if self._tag_column < 0 else self._tag_column
            needed = max(
                self._token_column + 1 if self._token_column >= 0 else -self._token_column,
                self._tag_column + 1 if self._tag_column >= 0 else -self._tag_column,
                2,
            )
            if len(columns) < needed or token_index == tag_index:
                raise DataFormatError(
                    path, line.number, f"row has {len(columns)} column(s), expected at least {needed} "
                    f"(token column {self._token_column}, tag column {self._tag_column})",
                )
            width = check_row_width(path, line.number, len(columns), width)
            words.append(columns[token_index])
            tags.append(columns[tag_index])
            lines.append(line.number)
        try:
            spans, repaired = tags_to_spans(tags, self._input_scheme, repair=self._repair_iob)
        except TagSequenceError as error:
            message = error.message
            if self._input_scheme in ("IOB2", "BIO") and _is_iob1(tags):
                message += ("; the sentence is valid IOB1, as in the original CoNLL-2003 release: read the file with "
                            "input_scheme='IOB1' (config variable INPUT_SCHEME=IOB1)")
            raise DataFormatError(path, lines[error.index], message) from None
        for index in repaired:
            logger.warning("%s:%d: %r repaired to %r (repair_iob=True)",
                           path, lines[index], tags[index], "B-" + tags[index][2:])
        return self._finish(path, words, spans_to_tags(len(tags), spans, self._coding_scheme), lines, block[0].number)
