"""Line-numbered reading of UTF-8 data files, and `DataFormatError`s made without importing AllenNLP.

Where this sits: every reader streams its files through `numbered_lines` (`bitcode_allennlp.data.dataset_readers`
re-exports it from `tagging_reader`), and `bitcode_allennlp.structs.trees` reads PTB files with it. Pure Python:
`DataFormatError` subclasses AllenNLP's `ConfigurationError`, so it is imported only when an error is made
(`data_format_error`), and modules that import this one (the trees, which spaCy extensions use) stay free of
AllenNLP.
"""
import codecs
from typing import TYPE_CHECKING, Iterator, NamedTuple, Optional

if TYPE_CHECKING:
    from bitcode_allennlp.host.errors import DataFormatError


def data_format_error(path: str, line: Optional[int], message: str) -> "DataFormatError":
    """`DataFormatError(path, line, message)`, importing it (and AllenNLP's `ConfigurationError`) on first use."""
    from bitcode_allennlp.host.errors import DataFormatError

    return DataFormatError(path, line, message)


class NumberedLine(NamedTuple):
    """One line of a file: 1-based `number`, `text` without its line end, and `error` if it is not UTF-8."""

    number: int
    text: str
    error: Optional["DataFormatError"]


def numbered_lines(path: str) -> Iterator[NumberedLine]:
    """
    Streams the lines of a UTF-8 file, split on LF only, so numbers agree with `grep -n` and editors.

    Strips a CR before the LF and a byte-order mark at the start of the file. A line that is not valid UTF-8 is
    decoded with replacement characters and carries the `DataFormatError` to raise for it.
    """
    with open(path, "rb") as file:
        for number, raw in enumerate(file, 1):
            if raw.endswith(b"\n"):
                raw = raw[:-1]
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            if number == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8) :]
            try:
                yield NumberedLine(number, raw.decode("utf-8"), None)
            except UnicodeDecodeError as decode_error:
                bad = raw[decode_error.start : decode_error.end]
                error = data_format_error(
                    path, number, f"invalid UTF-8 (byte {decode_error.start + 1} of the line: {bad!r})"
                )
                yield NumberedLine(number, raw.decode("utf-8", errors="replace"), error)
