"""Reader for CoNLL-U (Universal Dependencies) files, for the POS tagging stage.

Where this sits: `conllu_pos` feeds the hashing-stage POS tagger (and the re-annotation of a corpus) with the
syntactic words of each sentence and their XPOS (Penn Treebank tags for English EWT) or UPOS tags.
"""
import re
from typing import Dict, Iterator, List, Optional, Tuple

from allennlp.data.dataset_readers.dataset_reader import DatasetReader
from allennlp.data.token_indexers import TokenIndexer

from bitcode_allennlp.host.errors import DataFormatError
from bitcode_allennlp.data.dataset_readers.tagging_reader import (
    Sentence,
    TaggingDatasetReader,
    apply_token_policy,
    file_blocks,
    resolve_path,
)
from bitcode_allennlp.common.text_lines import NumberedLine
from bitcode_allennlp.common.checks import check_choice

COLUMNS = 10
TAG_COLUMNS = {"upos": 3, "xpos": 4}
_RANGE = re.compile(r"([1-9][0-9]*)-([1-9][0-9]*)")
_EMPTY_NODE = re.compile(r"(0|[1-9][0-9]*)\.[1-9][0-9]*")


@DatasetReader.register("conllu_pos")
class ConlluPosDatasetReader(TaggingDatasetReader):
    """
    Reads the words (FORM) and POS tags of CoNLL-U files: 10 TAB-separated columns per word, `#` comment lines,
    a blank line after each sentence. Multiword-token lines (`3-4`) and empty nodes (`8.1`) are skipped, so the
    words are the syntactic words numbered 1, 2, ... A missing tag (`_`) is an error. Instances: `"tokens"`,
    `"tags"` (namespace `"labels"`) and `"metadata"` (`{"words", "source"}`).

    # Parameters

    token_indexers : `Dict[str, TokenIndexer]`, optional (default = `{"tokens": SingleIdTokenIndexer()}`)
    tag : `str`, optional (default = `"xpos"`)
        `"xpos"` (column 5, language-specific, e.g. Penn Treebank) or `"upos"` (column 4, universal).
    token_policy : `str`, optional (default = `"strict"`)
        `"strict"` raises on an empty FORM or one containing whitespace; `"repair"` strips it and writes inner
        whitespace as `"_"` (an empty FORM still raises, since it carries a tag).
    skip_invalid : `bool`, optional (default = `False`)
        Skip malformed sentences (one warning at the end) instead of raising `DataFormatError`.
    """

    def __init__(
        self,
        token_indexers: Optional[Dict[str, TokenIndexer]] = None,
        tag: str = "xpos",
        token_policy: str = "strict",
        skip_invalid: bool = False,
        **kwargs,
    ) -> None:
        super().__init__(token_indexers=token_indexers, token_policy=token_policy, skip_invalid=skip_invalid, **kwargs)
        check_choice("tag", tag, tuple(TAG_COLUMNS))
        self._tag = tag

    def _sentence_items(self, file_path: str) -> Iterator[object]:
        def has_rows(block: List[NumberedLine]) -> bool:  # not comments alone, e.g. at the end of a file
            return not all(line.text.startswith("#") and line.error is None for line in block)

        return file_blocks(resolve_path(file_path), lambda text: not text.strip(), keep=has_rows)

    def _parse_item(self, item: Tuple[str, List[NumberedLine]]) -> Sentence:
        path, block = item
        words, tags, lines = [], [], []
        for line in block:
            if line.error is not None:
                raise line.error
            if line.text.startswith("#"):
                continue
            columns = line.text.split("\t")
            if len(columns) != COLUMNS:
                raise DataFormatError(
                    path, line.number, f"CoNLL-U row has {len(columns)} TAB-separated columns, expected {COLUMNS}"
                )
            word_id = columns[0]
            if _RANGE.fullmatch(word_id) or _EMPTY_NODE.fullmatch(word_id):
                continue
            if word_id != str(len(words) + 1):
                raise DataFormatError(
                    path, line.number, f"word ID {word_id!r}, expected {len(words) + 1} (IDs count 1, 2, ... "
                    "in each sentence; is a blank line missing?)",
                )
            tag = columns[TAG_COLUMNS[self._tag]]
            if tag in ("", "_") or tag != tag.strip():
                raise DataFormatError(path, line.number, f"missing or malformed {self._tag.upper()} {tag!r}")
            words.append(columns[1])
            tags.append(tag)
            lines.append(line.number)
        if not words:
            raise DataFormatError(path, block[0].number, "sentence has no words (only comments, multiword "
                                                         "tokens or empty nodes)")
        words, tags, _ = apply_token_policy(path, self._token_policy, words, tags, lines)
        return Sentence(words, tags, f"{path}:{block[0].number}")
