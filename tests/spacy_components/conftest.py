"""The fixture archives and predictors of tests/predictors (trained once per session, see archives.py)."""
from tests.predictors.conftest import ner_archive, ner_predictor, parser_archive, parser_predictor  # noqa: F401
