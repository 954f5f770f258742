"""Paths and small helpers for the dataset-reader tests (tests run from any working directory)."""
from pathlib import Path
from typing import List, Optional, Tuple, Union

import pytest

from bitcode_allennlp.host.errors import DataFormatError

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_DATA = ROOT / "fixtures" / "data"
SHARED_DATA = ROOT.parent / "shared" / "data"


def shared(relative: str) -> Path:
    """A file of the shared corpora (``<repo>/../shared/data``); skips the test when they are absent."""
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.skip(f"{path} not found (the shared corpora live beside the repository)")
    return path


def fixture(relative: str) -> Path:
    """A committed file of ``fixtures/data``; a missing one fails the test (it is part of the checkout)."""
    path = FIXTURE_DATA / relative
    assert path.exists(), f"committed fixture {path} is missing (regenerate: python fixtures/make_fixtures.py)"
    return path


def write(directory: Path, name: str, content: Union[str, bytes]) -> str:
    """Writes `content` (str as UTF-8, with no newline translation) and returns the path as a string."""
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return str(path)


Read = Tuple[List[str], Optional[List[str]], str]


def read(reader, path) -> List[Read]:
    """(words, tags, source) of every instance, reading `path` with `reader`."""
    result = []
    for instance in reader.read(path):
        metadata = instance["metadata"].metadata
        tokens = [token.text for token in instance["tokens"].tokens]
        assert tokens == metadata["words"]
        tags = list(instance["tags"].labels) if "tags" in instance.fields else None
        result.append((tokens, tags, metadata["source"]))
    return result


def read_error(reader, path) -> DataFormatError:
    """The `DataFormatError` that reading `path` raises (fails if it reads cleanly)."""
    with pytest.raises(DataFormatError) as info:
        read(reader, path)
    return info.value
