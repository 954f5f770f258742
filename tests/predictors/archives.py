"""Tiny archives trained once per test session on the fixtures (for tests/predictors and tests/spacy_components)."""
from pathlib import Path
from typing import Dict

from tests.conftest import CONFIGS, run_cli

CONFIG = {"ner": "ner_hash.jsonnet", "parser": "parse_hash.jsonnet"}
# One epoch each; the parser's new layers at a high rate and its batches as when these archives were tuned (2048
# padded sub-tokens), so that its trees have phrases (else they are flat and the tree tests compare nothing).
ENV = {"ner": {"EPOCHS": "1"}, "parser": {"EPOCHS": "1", "HEAD_LR": "1e-2", "LR": "1e-3", "MAX_SUBTOKENS": "2048"}}
_TRAINED: Dict[str, Path] = {}


def fixture_archive(tmp_path_factory, kind: str) -> Path:
    """`model.tar.gz` of `allennlp train training_configs/<ner|parse>_hash.jsonnet` on the fixtures (~35 s each)."""
    if kind not in _TRAINED:
        workdir = tmp_path_factory.mktemp(f"{kind}_archive")
        run_cli(["train", CONFIGS / CONFIG[kind], "-s", workdir / "run"], cwd=workdir, env=ENV[kind])
        _TRAINED[kind] = workdir / "run" / "model.tar.gz"
    return _TRAINED[kind]
