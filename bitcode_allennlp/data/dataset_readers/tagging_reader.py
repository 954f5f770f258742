"""What the tagging-stage readers share: line-numbered reading, sharding, `skip_invalid` and the token policy.

Where this sits: `ptb_hash`, `ontonotes_hash`, `conll_columns` and `conllu_pos` subclass `TaggingDatasetReader`. A
subclass turns a file into a stream of cheap raw items (one per sentence, or a `DataFormatError` for a stretch of
the file that is not a sentence) and parses one item into a `Sentence`; the base class shards the stream, skips or
raises on errors and builds the instances. Errors travel in the stream, so each is reported once, by the worker
that owns it, and a bad sentence never desynchronises the ones after it. `numbered_lines` lives in
`bitcode_allennlp.common.text_lines` (pure Python, also used by `structs.trees`) and is re-exported here.
"""
import logging
import os
import re
from typing import Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple, TypeVar, Union

from allennlp.common.checks import ConfigurationError
from allennlp.common.file_utils import cached_path
from allennlp.data.dataset_readers.dataset_reader import DatasetReader
from allennlp.data.fields import Field, MetadataField, SequenceLabelField, TextField
from allennlp.data.instance import Instance
from allennlp.data.token_indexers import SingleIdTokenIndexer, TokenIndexer
from allennlp.data.tokenizers import Token

from bitcode_allennlp.common.checks import check_choice, check_range
from bitcode_allennlp.host.errors import DataFormatError
from bitcode_allennlp.common.text_checks import DEFAULT_MAX_WORDS, length_problem
from bitcode_allennlp.common.text_lines import NumberedLine, numbered_lines

logger = logging.getLogger(__name__)

_T = TypeVar("_T")
TOKEN_POLICIES = ("strict", "repair")
MAX_LISTED_SKIPS = 20
ASCII_SPACE = " \t\x0b\x0c"
_SPACES = re.compile(f"[{ASCII_SPACE}]+")
_WHITESPACE = re.compile(r"\s")  # the characters of str.isspace()


class Sentence(NamedTuple):
    """A parsed sentence: words, gold tags (or `None`) and `"<file>:<line>"` of its first line."""

    words: List[str]
    tags: Optional[List[str]]
    source: str


def resolve_path(path: Union[str, os.PathLike], directory_ok: bool = False) -> str:
    """A local path for `path` (URLs go through `cached_path`); `DataFormatError` if there is nothing there."""
    path = os.fspath(path)
    if not os.path.exists(path) and ("://" in path or "!" in path):
        path = str(cached_path(path))
    if not os.path.exists(path):
        raise DataFormatError(path, None, "file does not exist")
    if os.path.isdir(path) and not directory_ok:
        raise DataFormatError(path, None, "is a directory, expected a file")
    return path


def find_files(path: str, suffix: str) -> List[str]:
    """`path` itself if it is a file, else the files under it whose names end with `suffix`, sorted."""
    if not os.path.isdir(path):
        return [path]
    found = []
    for root, directories, names in os.walk(path):
        directories.sort()
        found.extend(os.path.join(root, name) for name in sorted(names) if name.endswith(suffix))
    return found


def split_columns(text: str, delimiter: Optional[str] = None) -> List[str]:
    """
    `text` split on `delimiter`; `None` means TAB when the line has one, else runs of ASCII spaces (other
    Unicode whitespace, e.g. U+2009, stays inside a token, where the token policy judges it).
    """
    if delimiter is not None:
        return text.split(delimiter)
    if "\t" in text:
        return text.split("\t")
    return _SPACES.split(text.strip(ASCII_SPACE))


def line_blocks(lines: Iterable[NumberedLine], is_boundary) -> Iterator[List[NumberedLine]]:
    """Groups consecutive lines for which `is_boundary(text)` is false (e.g. the rows between blank lines)."""
    block: List[NumberedLine] = []
    for line in lines:
        if is_boundary(line.text):
            if block:
                yield block
                block = []
        else:
            block.append(line)
    if block:
        yield block


def file_blocks(path: str, is_boundary, keep=None) -> Iterator[object]:
    """
    `(path, block)` for each block of `line_blocks` over the lines of `path` (only those `keep(block)` accepts,
    when given), or one `DataFormatError` when there is none: the sentence items of the column-file readers.
    """
    found = False
    for block in line_blocks(numbered_lines(path), is_boundary):
        if keep is not None and not keep(block):
            continue
        found = True
        yield path, block
    if not found:
        yield DataFormatError(path, None, "no sentences (the file is empty)")


def check_row_width(
    path: str, line: int, width: int, first: Optional[Tuple[int, int]], row: str = "row"
) -> Tuple[int, int]:
    """
    `first`, the `(width, line)` of the sentence's first row (this row's when `first` is `None`);
    `DataFormatError` when this row has another number of columns than the first. `row` names rows in the message.
    """
    if first is None:
        return width, line
    if width != first[0]:
        raise DataFormatError(
            path, line, f"{row} has {width} columns, the sentence's first row (line {first[1]}) has {first[0]}",
        )
    return first


def apply_token_policy(
    path: str, policy: str, words: Sequence[str], tags: Optional[Sequence[str]], lines: Sequence[int]
) -> Tuple[List[str], Optional[List[str]], List[int]]:
    """
    Checks (`"strict"`) or repairs (`"repair"`) empty tokens and tokens containing whitespace.

    `"repair"` strips surrounding whitespace, turns each whitespace character inside a token into `"_"`, and drops a
    token that is empty after stripping if it carries no label (tag `O`, or no gold tags); an empty token with any
    other tag raises. Returns the kept words, tags and line numbers.
    """
    kept_words: List[str] = []
    kept_tags: Optional[List[str]] = None if tags is None else []
    kept_lines: List[int] = []
    for index, (word, line) in enumerate(zip(words, lines)):
        tag = None if tags is None else tags[index]
        if not word or _WHITESPACE.search(word):
            if policy == "strict":
                if word.strip():
                    problem = "contains whitespace (token_policy='repair' fixes this)"
                elif tag in (None, "O"):
                    problem = "is empty (token_policy='repair' drops it)"
                else:
                    problem = f"is empty and tagged {tag!r} (it cannot be dropped, not even with token_policy='repair')"
                raise DataFormatError(path, line, f"token {word!r} {problem}")
            word = "".join("_" if character.isspace() else character for character in word.strip())
            if not word:
                if tag not in (None, "O"):
                    raise DataFormatError(path, line, f"empty token tagged {tag!r} cannot be dropped")
                continue
        kept_words.append(word)
        kept_lines.append(line)
        if kept_tags is not None:
            kept_tags.append(tag)
    return kept_words, kept_tags, kept_lines


class TaggingDatasetReader(DatasetReader):
    """
    Base class of the tagging-stage readers; not registered. Instances have `"tokens"` (a `TextField` of the
    words), `"tags"` (a `SequenceLabelField` in the `"labels"` namespace, only with gold tags) and `"metadata"`
    (`{"words": [...], "source": "<file>:<first line of the sentence>"}`).

    # Parameters

    token_indexers : `Dict[str, TokenIndexer]`, optional (default = `{"tokens": SingleIdTokenIndexer()}`)
        Configs for the hashing stage pass `{"tokens": {"type": "plm_words", ...}}`.
    token_policy : `str`, optional (default = `"strict"`)
        `"strict"` or `"repair"`: what `apply_token_policy` does with empty tokens and tokens containing whitespace.
    skip_invalid : `bool`, optional (default = `False`)
        Skip malformed sentences instead of raising `DataFormatError`; one warning at the end of reading says
        how many were skipped and where.
    max_words : `int`, optional (default = `None`)
        A longer sentence is malformed (`DataFormatError`, or skipped with `skip_invalid`): the hash layer's memory
        grows with the square of a sentence. `None`: the reader's default, `default_max_words` (2,000 words;
        `bitcode_allennlp.common.text_checks`).
    **kwargs
        `DatasetReader` arguments, e.g. `max_instances`. Sharding for distributed training and multi-process
        loading is done here (per sentence).
    """

    def __init__(
        self,
        token_indexers: Optional[Dict[str, TokenIndexer]] = None,
        token_policy: str = "strict",
        skip_invalid: bool = False,
        max_words: Optional[int] = None,
        **kwargs,
    ) -> None:
        super().__init__(manual_distributed_sharding=True, manual_multiprocess_sharding=True, **kwargs)
        check_choice("token_policy", token_policy, TOKEN_POLICIES)
        check_range("max_words", max_words, 1, optional=True)
        self._token_indexers = token_indexers or {"tokens": SingleIdTokenIndexer()}
        self._token_policy = token_policy
        self._skip_invalid = skip_invalid
        self.max_words = max_words if max_words is not None else self.default_max_words

    default_max_words = DEFAULT_MAX_WORDS

    # ------------------------------------------------------------------------------------ for subclasses

    def _sentence_items(self, file_path: str) -> Iterator[object]:
        """Raw items, one per sentence (or a `DataFormatError`), cheap to make; raises for a missing file."""
        raise NotImplementedError

    def _parse_item(self, item) -> Optional[Sentence]:
        """The `Sentence` of one raw item (`None` to yield nothing); raises `DataFormatError`."""
        raise NotImplementedError

    def _finish(self, path: str, words: List[str], tags: List[str], lines: List[int], first: int) -> Optional[Sentence]:
        """
        The `Sentence` of a sentence's words and tags (on file lines `lines`, the first row at line `first`) after the
        token policy; `None`, with a warning, when the policy drops every word.
        """
        words, tags, _ = apply_token_policy(path, self._token_policy, words, tags, lines)
        if not words:  # only empty tokens, all dropped by token_policy="repair"
            logger.warning("%s:%d: sentence dropped, it has only empty tokens (token_policy='repair')", path, first)
            return None
        return Sentence(words, tags, f"{path}:{first}")

    def _check_length(self, parsed) -> None:
        """`DataFormatError` at the sentence's first line when it is longer than `max_words`."""
        problem = length_problem(self._num_words(parsed), self.max_words)
        if problem is not None:
            source = parsed["source"] if isinstance(parsed, dict) else parsed.source
            path, _, line = source.rpartition(":")
            raise DataFormatError(path, int(line) if line.isdigit() else None, problem)

    @staticmethod
    def _num_words(parsed) -> int:
        """Words of what `_parse_item` returned: a `Sentence`, or a record with `"words"` (codes corpora)."""
        return len(parsed["words"] if isinstance(parsed, dict) else parsed.words)

    def _instance(self, parsed) -> Instance:
        """The instance of what `_parse_item` returned (a `Sentence` here; subclasses may return other things)."""
        return self.text_to_instance(parsed.words, parsed.tags, source=parsed.source)

    # ------------------------------------------------------------------------------------ reading

    def _read(self, file_path) -> Iterator[Instance]:
        skipped: List[DataFormatError] = []
        try:
            for item in self._shard(self._sentence_items(os.fspath(file_path))):
                try:
                    if isinstance(item, DataFormatError):
                        raise item
                    sentence = self._parse_item(item)
                    if sentence is not None:
                        self._check_length(sentence)
                except DataFormatError as error:
                    if not self._skip_invalid:
                        raise
                    skipped.append(error)
                    continue
                if sentence is not None:
                    yield self._instance(sentence)
        finally:
            if skipped:
                listed = ", ".join(error.location for error in skipped[:MAX_LISTED_SKIPS])
                more = f" and {len(skipped) - MAX_LISTED_SKIPS} more" if len(skipped) > MAX_LISTED_SKIPS else ""
                logger.warning(
                    "Skipped %d invalid sentence(s) reading %s (skip_invalid=True): %s%s. First error: %s",
                    len(skipped), file_path, listed, more, skipped[0],
                )

    def _shard(self, items: Iterable[_T]) -> Iterator[_T]:
        # `shard_iterable` also stops after `max_instances` items, but skipped items are not instances; the base
        # class caps the instances themselves (per worker), so the item stream is sharded without the cap.
        max_instances, self.max_instances = self.max_instances, None
        try:
            return self.shard_iterable(items)
        finally:
            self.max_instances = max_instances

    def text_to_instance(  # type: ignore
        self,
        tokens: Sequence[Union[str, Token]],
        tags: Optional[Sequence[str]] = None,
        source: Optional[str] = None,
    ) -> Instance:
        """
        An instance for pre-tokenized words; `tags` (already in the output scheme) are optional, for predictors.
        `source` is where the sentence comes from (`None` outside files).
        """
        tokens = [token if isinstance(token, Token) else Token(token) for token in tokens]
        text_field = TextField(tokens)
        fields: Dict[str, Field] = {
            "tokens": text_field,
            "metadata": MetadataField({"words": [token.text for token in tokens], "source": source}),
        }
        if tags is not None:
            if len(tags) != len(tokens):
                raise ConfigurationError(f"{len(tags)} tags for {len(tokens)} tokens")
            fields["tags"] = SequenceLabelField(list(tags), text_field, label_namespace="labels")
        return Instance(fields)

    def apply_token_indexers(self, instance: Instance) -> None:
        instance.fields["tokens"].token_indexers = self._token_indexers  # type: ignore

