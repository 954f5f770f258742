import pytest

from tests.predictors.archives import fixture_archive


@pytest.fixture(scope="session")
def ner_archive(tmp_path_factory):
    return fixture_archive(tmp_path_factory, "ner")


@pytest.fixture(scope="session")
def parser_archive(tmp_path_factory):
    return fixture_archive(tmp_path_factory, "parser")


@pytest.fixture(scope="session")
def ner_predictor(ner_archive):
    import bitcode_allennlp

    return bitcode_allennlp.load(ner_archive).predictor


@pytest.fixture(scope="session")
def parser_predictor(parser_archive):
    import bitcode_allennlp

    return bitcode_allennlp.load(parser_archive).predictor
