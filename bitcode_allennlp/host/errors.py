"""Errors for malformed input data.

Where this sits: every dataset reader in ``bitcode_allennlp.data.dataset_readers`` raises `DataFormatError` when a
file is missing, empty or malformed, so that a user sees which file, which line and what is wrong, and can catch
one exception type for all of them. `allennlp predict` reports a bad input line as a `DataFormatError` too, and a
model archive that cannot be read raises `ArchiveError`. Through the `allennlp` command both print as one line
(`bitcode_allennlp.host.bad_input`).
"""
from typing import Any, Optional, Tuple

# AllenNLP's ConfigurationError, or its stand-in in the light `allennlp bits` process (see host/names.py)
from bitcode_allennlp.host.names import ConfigurationError


class DataFormatError(ConfigurationError):
    """
    A data file that cannot be read as the format it is declared to be.

    A subclass of AllenNLP's `ConfigurationError` (not of `ValueError`): a data file is part of an experiment's
    configuration, and AllenNLP code that reports configuration problems already catches it.

    `str(error)` is `"<path>, line <line>: <message>"`, or `"<path>: <message>"` when the problem concerns the
    whole file (missing, empty, a directory without data files).

    # Parameters

    path : `str`
        The file (or directory) as the reader was given it.
    line : `Optional[int]`
        1-based line number where the problem is (for a construct spanning several lines, where it starts).
    message : `str`
        What is wrong, without the location.
    """

    def __init__(self, path: str, line: Optional[int], message: str) -> None:
        super().__init__(message)
        self.path = str(path)
        self.line = line
        self.message = message

    def __str__(self) -> str:
        if self.line is None:
            return f"{self.path}: {self.message}"
        return f"{self.path}, line {self.line}: {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path!r}, {self.line!r}, {self.message!r})"

    def __reduce__(self) -> Tuple[Any, ...]:
        # Pickled when a data-loader worker process sends it back to the main process.
        return type(self), (self.path, self.line, self.message)

    @property
    def location(self) -> str:
        """`"<path>:<line>"` (or just the path), as in an instance's `metadata["source"]`."""
        return self.path if self.line is None else f"{self.path}:{self.line}"


class ArchiveError(ConfigurationError):
    """
    A model archive (`model.tar.gz`) that cannot be read: missing, empty, truncated, not a gzipped tar file, or
    without `config.json`. `str(error)` is `"<path>: <message>"`.

    # Parameters

    path : `str`
        The archive as the user gave it.
    message : `str`
        What is wrong, without the path.
    """

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = str(path)
        self.message = message

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"

    def __reduce__(self) -> Tuple[Any, ...]:
        return type(self), (self.path, self.message)
