"""Shared paths for the tests. Tests run from any working directory; ../shared sits beside the repository."""
import itertools
import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

import pytest

from bitcode_allennlp.plm import FIXTURES as PLM_FIXTURES

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
SHARED = ROOT.parent / "shared"
TINY_BERT = FIXTURES / "transformers" / "tiny-bert"
TINY_GPT2 = FIXTURES / "transformers" / "tiny-gpt2"
CONFIGS = ROOT / "training_configs"
# The PLM families of fixtures/transformers/ (tiny random models; bitcode_allennlp.plm.FIXTURES says what each is).
FAMILIES = tuple(PLM_FIXTURES)
DECODERS = tuple(name for name, (_, kind) in PLM_FIXTURES.items() if kind.endswith("causal"))


def family_path(name: str) -> Path:
    return FIXTURES / "transformers" / name


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes more than about 20 s (e.g. builds and installs a wheel); "
                                       "-m 'not slow' leaves it out")
    if os.environ.get("PYTEST_XDIST_WORKER"):  # `make test` runs two workers on two cores: one thread each
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        import torch

        torch.set_num_threads(1)


def pair_loop_hash_metric(codes, labels):
    """The oracle of the HashMetric triple: a loop over every unordered pair of word occurrences. The shares of
    same-label pairs with the same code and of different-label pairs with different codes (None without such pairs),
    and distinct codes per distinct label (None without words)."""
    same_label = same_both = diff_label = diff_both = 0
    for (code_a, label_a), (code_b, label_b) in itertools.combinations(zip(codes, labels), 2):
        if label_a == label_b:
            same_label += 1
            same_both += code_a == code_b
        else:
            diff_label += 1
            diff_both += code_a != code_b
    return (same_both / same_label if same_label else None, diff_both / diff_label if diff_label else None,
            len(set(codes)) / len(set(labels)) if len(codes) else None)


def run_cli(args, cwd=None, env=None, timeout=600):
    """Runs the `allennlp` command in a fresh process (as a user would) and returns the CompletedProcess."""
    command = [sys.executable, "-m", "allennlp"] + [str(a) for a in args]
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **(env or {})}
    result = subprocess.run(command, cwd=cwd or ROOT, env=full_env, capture_output=True, text=True,
                            timeout=timeout)
    if result.returncode != 0:
        raise AssertionError(f"allennlp {' '.join(map(str, args))} failed ({result.returncode}):\n"
                             f"{result.stdout[-3000:]}\n{result.stderr[-6000:]}")
    return result


@contextmanager
def environment(**variables):
    """`os.environ` with `variables` set, restored after."""
    saved = dict(os.environ)
    os.environ.update(variables)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def allennlp_in_process(*argv, **variables) -> None:
    """`allennlp ARGV` through AllenNLP's own parser and the sub-command's function, in this process (the real
    sub-command without a process start); `variables` are set in the environment meanwhile."""
    import bitcode_allennlp.plugin  # noqa: F401
    from allennlp.commands import parse_args

    saved = sys.argv
    sys.argv = ["allennlp", *map(str, argv)]
    try:
        with environment(**variables):
            _, args = parse_args("allennlp")
            args.func(args)
    finally:
        sys.argv = saved


def build(config: str, seed: Optional[int] = None, eval_mode: bool = False):
    """A shipped config built as `allennlp train` builds it: its reader, the training instances, the vocabulary of
    those and a fresh model (the config's variables come from the environment, e.g. `monkeypatch.setenv`). `seed`:
    `torch.manual_seed` right before the model is made. Returns `(model, reader, instances)`."""
    import torch
    from allennlp.common import Params
    from allennlp.data import DatasetReader, Vocabulary
    from allennlp.models import Model

    import bitcode_allennlp.plugin  # noqa: F401

    params = Params.from_file(str(CONFIGS / config))
    reader = DatasetReader.from_params(params.pop("dataset_reader"))
    instances = list(reader.read(params.pop("train_data_path")))
    if seed is not None:
        torch.manual_seed(seed)
    model = Model.from_params(vocab=Vocabulary.from_instances(instances), params=params.pop("model"))
    return (model.eval() if eval_mode else model), reader, instances



def two_view_forward(model, instances, seed: int = 3):
    """A training-mode forward of the first 4 instances under `torch.manual_seed(seed)`, then the seed set again, so
    that a test can recompute the two views piece by piece with the same dropout masks. Returns `(tensors, output)`."""
    import torch
    from allennlp.data import Batch

    model.train()
    batch = Batch(instances[:4])
    batch.index_instances(model.vocab)
    tensors = batch.as_tensor_dict()
    torch.manual_seed(seed)
    output = model(**tensors)
    assert output["hash_loss"] > 0
    torch.manual_seed(seed)  # the same dropout masks, recomputed piece by piece
    return tensors, output

@pytest.fixture(scope="session")
def shared_data():
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} not found (the corpora live beside the repository)")
    return SHARED / "data"


def train_archive(config: str, directory, **variables) -> str:
    """`config` trained for one epoch on the fixtures (tiny BERT) in this process; returns its model.tar.gz."""
    from allennlp.commands.train import train_model_from_file

    import bitcode_allennlp.plugin  # noqa: F401

    with environment(EPOCHS="1", **variables):
        train_model_from_file(str(CONFIGS / config), str(directory), force=True)
    return str(Path(directory) / "model.tar.gz")


@pytest.fixture(scope="session")
def ner_hash_archive(tmp_path_factory):
    """`ner_hash.jsonnet`, one epoch on the fixtures, shared by every test of the session."""
    return train_archive("ner_hash.jsonnet", tmp_path_factory.mktemp("ner_hash"))


@pytest.fixture(scope="session")
def parse_hash_archive(tmp_path_factory):
    """`parse_hash.jsonnet`, one epoch on the fixtures, shared by every test of the session."""
    return train_archive("parse_hash.jsonnet", tmp_path_factory.mktemp("parse_hash"))
