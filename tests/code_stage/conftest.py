"""Hashing-stage archives trained once per session on the fixtures (tiny-bert, 1 epoch), in this process."""
import os

import pytest
from allennlp.commands.train import train_model_from_file

import bitcode_allennlp.plugin  # noqa: F401
from tests.conftest import CONFIGS


def train_archive(config: str, directory, **variables) -> str:
    saved = dict(os.environ)
    os.environ.update({"EPOCHS": "1", **variables})
    try:
        train_model_from_file(str(CONFIGS / config), str(directory), force=True)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return str(directory / "model.tar.gz")


@pytest.fixture(scope="session")
def ner_hash_archive(tmp_path_factory):
    return train_archive("ner_hash.jsonnet", tmp_path_factory.mktemp("ner_hash"))


@pytest.fixture(scope="session")
def parse_hash_archive(tmp_path_factory):
    return train_archive("parse_hash.jsonnet", tmp_path_factory.mktemp("parse_hash"))
