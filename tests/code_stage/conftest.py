"""Hashing-stage archives trained once per session on the fixtures: `ner_hash_archive`, `parse_hash_archive` and
`train_archive` now live in tests/conftest.py (shared with tests/reliability); imported here for old imports."""
from tests.conftest import ner_hash_archive, parse_hash_archive, train_archive  # noqa: F401
