"""Bad input, the same checklist for every reader: CRLF and a byte-order mark are read, invalid UTF-8, an empty
token, a token with a space, an empty file and a directory without data files raise `DataFormatError` naming the
file and line; `skip_invalid` keeps the good sentences and reports how many were skipped and where; random bytes
never raise anything but `DataFormatError`. Format-specific cases (brackets, columns, entity brackets, IOB
repair) are in each reader's own tests under tests/data and tests/parsing."""
import logging
from typing import Callable, Dict, List, NamedTuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bitcode_allennlp.host.errors import DataFormatError
from bitcode_allennlp.data.dataset_readers import (
    ConllColumnsDatasetReader,
    ConlluPosDatasetReader,
    OntonotesHashDatasetReader,
    PtbHashDatasetReader,
)
from bitcode_allennlp.parsing.dataset_readers import PtbSpansDatasetReader
from tests.data.helpers import write

BAD = "XBADX"  # stands for a bad word; `render` output is encoded, then BAD is replaced by the bad bytes


def ptb(sentences: List[List[str]]) -> str:
    return "".join("(S " + " ".join(f"(NN {word})" for word in words) + ")\n" for words in sentences)


def columns(sentences: List[List[str]]) -> str:
    return "\n".join("".join(f"{word}\tO\n" for word in words) for words in sentences)


def conllu(sentences: List[List[str]]) -> str:
    return "\n".join("".join("\t".join([str(i + 1), word, "_", "NOUN", "NN", "_", "0", "root", "_", "_"]) + "\n"
                             for i, word in enumerate(words)) for words in sentences) + "\n"


def conll2012(sentences: List[List[str]]) -> str:
    return "\n".join("".join("\t".join(["d", "0", str(i), word, "NN", "*", "-", "-", "-", "-", "*", "-"]) + "\n"
                             for i, word in enumerate(words)) for words in sentences) + "\n"


class Format(NamedTuple):
    reader: Callable[..., object]
    render: Callable[[List[List[str]]], str]
    name: str  # file name
    tagged_words: bool  # words carry a POS tag, so an empty word cannot be dropped by token_policy="repair"
    directory_message: str
    space: str  # a word with inner whitespace the format can hold (trees split words on ASCII whitespace)


FORMATS: Dict[str, Format] = {
    "ptb_hash": Format(PtbHashDatasetReader, ptb, "a.tree", True,
                       "no files ending in '.mrg' under this directory", "b\u2009c"),
    "ptb_spans": Format(PtbSpansDatasetReader, ptb, "a.tree", True,
                        "no files ending in '.mrg' under this directory", "b\u2009c"),
    "conll_columns": Format(ConllColumnsDatasetReader, columns, "a.conll", False,
                            "is a directory, expected a file", "b c"),
    "conllu_pos": Format(ConlluPosDatasetReader, conllu, "a.conllu", True, "is a directory, expected a file", "b c"),
    "ontonotes_hash": Format(OntonotesHashDatasetReader, conll2012, "a_gold_conll", False,
                             "no files ending in 'gold_conll' under this directory", "b c"),
}
READERS = pytest.mark.parametrize("name", list(FORMATS))


def words_of(reader, path) -> List[List[str]]:
    return [instance["metadata"].metadata["words"] for instance in reader.read(path)]


def bad_file(tmp_path, name: str, bad: bytes):
    """A file of three sentences, the second with the word `bad`: the path, the line and the byte in that line
    (1-based) where `bad` starts."""
    text = FORMATS[name].render([["Before", "x"], ["a", BAD], ["After"]])
    line, column = next((number, content.index(BAD) + 1) for number, content in enumerate(text.split("\n"), 1)
                        if BAD in content)
    return write(tmp_path, FORMATS[name].name, text.encode().replace(BAD.encode(), bad)), line, column


@READERS
def test_crlf_and_byte_order_mark_are_read(tmp_path, name):
    text = FORMATS[name].render([["Hello", "world"], ["again"]])
    plain = write(tmp_path / "plain", FORMATS[name].name, text)
    windows = write(tmp_path / "windows", FORMATS[name].name, b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    reader = FORMATS[name].reader()
    assert words_of(reader, windows) == words_of(reader, plain) == [["Hello", "world"], ["again"]]


@READERS
@pytest.mark.parametrize("problem", ["invalid UTF-8", "space"])
def test_bad_word_names_file_and_line_and_skip_invalid_keeps_the_rest(tmp_path, caplog, name, problem):
    space = FORMATS[name].space
    path, line, column = bad_file(tmp_path, name, space.encode() if problem == "space" else b"b\xffc")
    if problem == "space":
        message = f"token {space!r} contains whitespace (token_policy='repair' fixes this)"
    else:
        message = f"invalid UTF-8 (byte {column + 1} of the line: b'\\xff')"
    with pytest.raises(DataFormatError) as info:
        words_of(FORMATS[name].reader(), path)
    assert (info.value.path, info.value.line) == (path, line)
    assert message in info.value.message
    assert str(info.value).startswith(f"{path}, line {line}: ")
    with caplog.at_level(logging.WARNING):
        assert words_of(FORMATS[name].reader(skip_invalid=True), path) == [["Before", "x"], ["After"]]
    assert (f"Skipped 1 invalid sentence(s) reading {path} (skip_invalid=True): {path}:{line}. First error: "
            f"{path}, line {line}: ") in caplog.text


@READERS
def test_empty_token(tmp_path, name):
    form = FORMATS[name]
    empty = "\u2009" if name.startswith("ptb") else ""  # a tree cannot write an empty word, only a blank one
    path, line, _ = bad_file(tmp_path, name, empty.encode())
    with pytest.raises(DataFormatError) as info:
        words_of(form.reader(), path)
    assert (info.value.path, info.value.line) == (path, line)
    if form.tagged_words:
        assert f"token {empty!r} is empty and tagged 'NN' (it cannot be dropped" in info.value.message
        with pytest.raises(DataFormatError, match="empty token tagged 'NN' cannot be dropped"):
            words_of(form.reader(token_policy="repair"), path)
    else:
        assert info.value.message == "token '' is empty (token_policy='repair' drops it)"
        assert words_of(form.reader(token_policy="repair"), path) == [["Before", "x"], ["a"], ["After"]]


@READERS
def test_token_with_a_space_is_repaired_on_request(tmp_path, name):
    path, _, _ = bad_file(tmp_path, name, FORMATS[name].space.encode())
    assert words_of(FORMATS[name].reader(token_policy="repair"), path) == [["Before", "x"], ["a", "b_c"], ["After"]]


@READERS
def test_empty_file_and_directory_without_data_files(tmp_path, name):
    form = FORMATS[name]
    for content in ["", "\n\n", b"\xef\xbb\xbf\r\n"]:
        path = write(tmp_path, form.name, content)
        with pytest.raises(DataFormatError) as info:
            words_of(form.reader(), path)
        assert (info.value.path, info.value.line) == (path, None)
        assert info.value.message.endswith("(the file is empty)")
        assert str(info.value) == f"{path}: {info.value.message}"
    directory = tmp_path / "empty_directory"
    directory.mkdir()
    write(directory, "README.txt", "no data here\n")
    with pytest.raises(DataFormatError) as info:
        words_of(form.reader(), str(directory))
    assert (info.value.path, info.value.line, info.value.message) == (str(directory), None, form.directory_message)
    missing = str(tmp_path / "missing" / form.name)
    with pytest.raises(DataFormatError, match="file does not exist"):
        words_of(form.reader(), missing)


# Bytes that matter to some format: brackets, TAB, spaces, line ends, a BOM, invalid UTF-8, Unicode whitespace.
PIECES = st.sampled_from([b"(", b")", b"(S ", b"(NN a)", b"\t", b" ", b"\n", b"\r\n", b"\xef\xbb\xbf", b"\xff",
                          b"\xe2\x80\x89", b"O", b"B-PER", b"I-PER", b"*", b"(PER*", b"*)", b"1", b"0", b"_", b"#",
                          b"-DOCSTART-", b"a"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(PIECES, max_size=40), st.booleans(), st.sampled_from(["strict", "repair"]))
def test_random_bytes_give_instances_or_data_format_error(tmp_path, pieces, skip, policy):
    content = b"".join(pieces)
    for name, form in FORMATS.items():
        path = write(tmp_path, form.name, content)
        try:
            sentences = words_of(form.reader(skip_invalid=skip, token_policy=policy), path)
        except DataFormatError as error:
            assert error.path == path and (error.line is None or 1 <= error.line <= content.count(b"\n") + 1)
            continue
        for words in sentences:
            assert words and all(word and not any(c.isspace() for c in word) for word in words), (name, words)
