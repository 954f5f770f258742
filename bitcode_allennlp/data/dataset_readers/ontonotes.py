"""Reader for OntoNotes 5.0 / CoNLL-2012 `*_gold_conll` files, for the NER tagging stage.

Where this sits: `ontonotes_hash` feeds the hashing-stage NER tagger (and the re-annotation of a corpus) with words
and named-entity tags recoded to BIOUL, from one file or from the released directory tree
(`conll-2012/v4/data/train/data/english/annotations/...`).
"""
import os
import re
from typing import Dict, Iterator, List, Optional, Tuple

from allennlp.common.checks import ConfigurationError
from allennlp.data.dataset_readers.dataset_reader import DatasetReader
from allennlp.data.token_indexers import TokenIndexer

from bitcode_allennlp.host.errors import DataFormatError
from bitcode_allennlp.data.dataset_readers.tag_coding import OUTPUT_SCHEMES, Span, spans_to_tags
from bitcode_allennlp.data.dataset_readers.tagging_reader import (
    Sentence,
    TaggingDatasetReader,
    check_row_width,
    file_blocks,
    find_files,
    resolve_path,
    split_columns,
)
from bitcode_allennlp.common.text_lines import NumberedLine
from bitcode_allennlp.common.checks import check_choice

MIN_COLUMNS = 12
WORD_COLUMN = 3
NE_COLUMN = 10
ESCAPED_WORDS = {"/.": ".", "/?": "?", "/-": "-"}
_NE_OPEN = re.compile(r"\(([^()*\s]+)\*?(\))?")


def parse_ne_column(path: str, values: List[str], lines: List[int]) -> List[Span]:
    """Spans of the bracketed NE column (`(PER*`, `*`, `*)`, `(PER)`) of one sentence; strict."""
    spans: List[Span] = []
    open_label: Optional[str] = None
    start = 0
    for index, value in enumerate(values):
        if value == "*":
            continue
        if value == "*)":
            if open_label is None:
                raise DataFormatError(path, lines[index], "NE bracket closed ('*)') without being opened")
            spans.append((open_label, start, index))
            open_label = None
            continue
        match = _NE_OPEN.fullmatch(value)
        if match is None:
            raise DataFormatError(path, lines[index], f"bad NE column value {value!r} (expected '(TYPE*', '*', "
                                                      "'*)' or '(TYPE)')")
        if open_label is not None:
            raise DataFormatError(path, lines[index], f"NE bracket {value!r} opened inside the {open_label!r} "
                                                      f"bracket opened at line {lines[start]} (nested)")
        if match.group(2):
            spans.append((match.group(1), index, index))
        else:
            open_label, start = match.group(1), index
    if open_label is not None:
        bracket = "(" + open_label + "*"
        raise DataFormatError(path, lines[start], f"NE bracket {bracket!r} is still open at the end of the sentence "
                                                  f"(line {lines[-1]})")
    return spans


@DatasetReader.register("ontonotes_hash")
class OntonotesHashDatasetReader(TaggingDatasetReader):
    """
    Reads the words and named entities of OntoNotes 5.0 / CoNLL-2012 `*_gold_conll` files. Rows have at least 12
    columns (document, part, word index, word, POS, parse bit, lemma, frameset, sense, speaker, NE, one column per
    predicate, coreference), separated by TABs or by runs of spaces; the NE column (index 10) is bracketed
    (`(PERSON*`, `*`, `*)`, `(PERSON)`) and is recoded to `coding_scheme`. `#begin document` / `#end document`
    lines and blank lines separate sentences. The words `/.`, `/?` and `/-` are unescaped; bracket escapes such as
    `-LRB-` are kept, as in the release. Instances: `"tokens"`, `"tags"` (namespace `"labels"`) and `"metadata"`
    (`{"words", "source"}`).

    Token policy: `"strict"` (default) raises on an empty word or one containing whitespace (possible in
    TAB-separated files); `"repair"` strips it, writes inner whitespace as `"_"` and drops empty words outside
    entities (and a sentence left without words, with a warning).

    # Parameters

    token_indexers : `Dict[str, TokenIndexer]`, optional (default = `{"tokens": SingleIdTokenIndexer()}`)
    domain_identifier : `Optional[str]`, optional (default = `None`)
        When reading a directory, only files whose path below it contains `/<domain_identifier>/` (e.g. `"nw"`).
        As in allennlp-models' `ontonotes_ner`, the `pt` (Bible) section, which has no NE annotation, is always
        left out of directories.
    coding_scheme : `str`, optional (default = `"BIOUL"`)
        Tag scheme of the instances: `"BIOUL"` or `"BIO"`.
    token_policy : `str`, optional (default = `"strict"`)
        `"strict"` or `"repair"`, see above.
    skip_invalid : `bool`, optional (default = `False`)
        Skip malformed sentences (one warning at the end) instead of raising `DataFormatError`.
    """

    def __init__(
        self,
        token_indexers: Optional[Dict[str, TokenIndexer]] = None,
        domain_identifier: Optional[str] = None,
        coding_scheme: str = "BIOUL",
        token_policy: str = "strict",
        skip_invalid: bool = False,
        **kwargs,
    ) -> None:
        super().__init__(token_indexers=token_indexers, token_policy=token_policy, skip_invalid=skip_invalid, **kwargs)
        check_choice("coding_scheme", coding_scheme, OUTPUT_SCHEMES)
        if domain_identifier == "pt":
            raise ConfigurationError("The OntoNotes 5.0 pt (Bible) section has no named-entity annotation.")
        self._domain_identifier = domain_identifier
        self._coding_scheme = coding_scheme

    def _files(self, file_path: str) -> List[str]:
        path = resolve_path(file_path, directory_ok=True)
        if not os.path.isdir(path):
            return [path]
        files = []
        for file in find_files(path, "gold_conll"):
            relative = "/" + os.path.relpath(file, path).replace(os.sep, "/")
            if "/pt/" in relative:
                continue
            if self._domain_identifier is not None and f"/{self._domain_identifier}/" not in relative:
                continue
            files.append(file)
        if not files:
            domain = f" in domain {self._domain_identifier!r}" if self._domain_identifier else ""
            raise DataFormatError(path, None, f"no files ending in 'gold_conll'{domain} under this directory")
        return files

    def _sentence_items(self, file_path: str) -> Iterator[object]:
        for path in self._files(file_path):
            yield from file_blocks(path, lambda text: not text.strip() or text.startswith("#"))

    def _parse_item(self, item: Tuple[str, List[NumberedLine]]) -> Optional[Sentence]:
        path, block = item
        words, ne_values, lines = [], [], []
        first: Optional[Tuple[int, int]] = None
        for position, line in enumerate(block):
            if line.error is not None:
                raise line.error
            columns = split_columns(line.text)
            if len(columns) < MIN_COLUMNS:
                raise DataFormatError(
                    path, line.number, f"CoNLL-2012 row has {len(columns)} columns, expected at least {MIN_COLUMNS}"
                )
            first = check_row_width(path, line.number, len(columns), first, row="CoNLL-2012 row")
            if columns[2] != str(position):
                raise DataFormatError(
                    path, line.number, f"word index {columns[2]!r}, expected {position} (rows of a sentence are "
                    "numbered from 0; is a blank line missing?)",
                )
            word = columns[WORD_COLUMN]
            words.append(ESCAPED_WORDS.get(word, word))
            ne_values.append(columns[NE_COLUMN])
            lines.append(line.number)
        spans = parse_ne_column(path, ne_values, lines)
        return self._finish(path, words, spans_to_tags(len(words), spans, self._coding_scheme), lines, block[0].number)
