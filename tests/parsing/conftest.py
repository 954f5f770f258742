import pytest

from tests.parsing.helpers import compile_evalb


@pytest.fixture(scope="session")
def evalb_program(tmp_path_factory):
    """The real EVALB, compiled from AllenNLP's copy of evalb.c into a temporary directory."""
    binary, reason = compile_evalb(tmp_path_factory.mktemp("evalb"))
    if binary is None:
        pytest.skip(f"cannot build the EVALB program: {reason}")
    return binary
