"""The same seed gives the same codes and scores as the code of fixtures/regression/ (made by
fixtures/make_regression.py before the refactors of the house): every word's code of the re-annotated fixture
corpora and the dev scores and losses of both stages, per task."""
import importlib.util
import json

import pytest

from tests.conftest import FIXTURES

spec = importlib.util.spec_from_file_location("make_regression", FIXTURES / "make_regression.py")
make_regression = importlib.util.module_from_spec(spec)
spec.loader.exec_module(make_regression)


@pytest.mark.parametrize("task", make_regression.TASKS)
def test_same_seed_same_codes_and_scores(task, tmp_path):
    expected = json.loads((FIXTURES / "regression" / f"{task}.json").read_text())
    got = make_regression.run(task, tmp_path / "exp")
    assert got["num_bits"] == expected["num_bits"]
    for split in ("train", "dev"):
        assert len(got["codes"][split]) == len(expected["codes"][split]) > 0
        for number, (ours, theirs) in enumerate(zip(got["codes"][split], expected["codes"][split]), 1):
            assert ours == theirs, f"{task} {split} sentence {number}: other words or codes"
    assert got["hashing_dev"] == pytest.approx(expected["hashing_dev"], abs=1e-9)
    assert got["validation_dev"] == pytest.approx(expected["validation_dev"], abs=1e-9)
    for stage, losses in expected["losses"].items():
        assert got["losses"][stage] == pytest.approx(losses, rel=1e-6), stage
