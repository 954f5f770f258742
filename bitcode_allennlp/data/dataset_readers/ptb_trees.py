"""The `ptb_hash` reader: words and part-of-speech tags of Penn Treebank bracketed trees.

Where this sits: `ptb_hash` feeds the hashing-stage POS tagger with the words and preterminal tags of PTB-style
trees (`.mrg` files, or one tree per line like CRAFT's `craft-*.tree`); the constituency-parsing reader
`ptb_spans` subclasses it. Scanning, parsing and cleaning trees (`scan_trees`, `parse_tree`, `clean_tree`, ...)
live in `bitcode_allennlp.structs.trees` (binarizing: `structs.binarization`), and are re-exported here.
"""
import os
from typing import Iterator, Tuple, Union

from allennlp.data.dataset_readers.dataset_reader import DatasetReader
from nltk import Tree

from bitcode_allennlp.host.errors import DataFormatError
from bitcode_allennlp.data.dataset_readers.tagging_reader import (
    Sentence,
    TaggingDatasetReader,
    apply_token_policy,
    find_files,
    resolve_path,
)
from bitcode_allennlp.structs.trees import (
    RawTree,
    clean_tree,
    parse_tree,
    scan_trees,
    tree_pos,
    word_lines,
)


@DatasetReader.register("ptb_hash")
class PtbHashDatasetReader(TaggingDatasetReader):
    """
    Reads the words and part-of-speech tags (preterminal labels) of Penn Treebank bracketed trees: one tree per
    line or multi-line `.mrg` trees, separated by balanced brackets. `-NONE-` traces are removed; escapes such as
    `-LRB-`, `-LCB-`, `` `` `` and `''` are kept verbatim as words and tags. A directory is read as all its `*.mrg`
    files (recursively, sorted). Instances: `"tokens"`, `"tags"` (namespace `"labels"`) and `"metadata"`
    (`{"words", "source"}`, source = file and line where the tree starts).

    Token policy: words are separated by ASCII whitespace; other Unicode whitespace inside a word (CRAFT has
    `Xpd<U+200A>TTD` and `Bmp7<U+2009>` in 10 train and 2 dev trees) is judged by `token_policy`: `"strict"`
    (default) raises, `"repair"` strips it from the ends of the word and writes it as `"_"` inside (`Xpd_TTD`).
    CRAFT therefore needs `"repair"`.

    # Parameters

    token_indexers : `Dict[str, TokenIndexer]`, optional (default = `{"tokens": SingleIdTokenIndexer()}`)
    token_policy : `str`, optional (default = `"strict"`)
        `"strict"` or `"repair"`, see above.
    skip_invalid : `bool`, optional (default = `False`)
        Skip malformed trees (one warning at the end) instead of raising `DataFormatError`.

    The constructor is `TaggingDatasetReader`'s (the same parameters).
    """

    def _sentence_items(self, file_path: str) -> Iterator[object]:
        path = resolve_path(file_path, directory_ok=True)
        files = find_files(path, ".mrg")
        if not files:
            raise DataFormatError(path, None, "no files ending in '.mrg' under this directory")
        for file in files:
            for item in scan_trees(file):
                yield item if isinstance(item, DataFormatError) else (file, item)

    def _parse_item(self, item: Tuple[str, RawTree]) -> Sentence:
        path, raw = item
        tree = clean_tree(path, raw.line, parse_tree(path, raw), function_tags=False)
        words, tags = zip(*tree_pos(tree))
        words, tags, _ = apply_token_policy(path, self._token_policy, words, tags, word_lines(raw))
        return Sentence(words, tags, f"{path}:{raw.line}")


def read_trees(path: Union[str, os.PathLike]) -> Iterator[Tuple[Tree, str]]:
    """Every tree of a file as written (strict), with its `"<file>:<line>"`; for scripts and tests."""
    path = resolve_path(path)
    for item in scan_trees(path):
        if isinstance(item, DataFormatError):
            raise item
        yield parse_tree(path, item), f"{path}:{item.line}"
