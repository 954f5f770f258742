"""A trained archive is self-contained: moved elsewhere, with its training directory and the PLM directory it
was trained from deleted, it loads and predicts in a fresh process with no network from another working
directory (`allennlp predict`, `allennlp evaluate`, `load_archive`), with the same results as the model as
trained. The archive carries the PLM's config and tokenizer, not its weights (the extension `self_contained_archives`,
`bitcode_allennlp/host/archival.py`)."""
import json
import os
import shutil
import subprocess
import sys
import tarfile
from typing import NamedTuple

import pytest
from allennlp.common import Params
from allennlp.data import DatasetReader
from allennlp.models import Archive, Model, load_archive
from allennlp.predictors import Predictor

import bitcode_allennlp.plugin  # noqa: F401
from tests.conftest import CONFIGS, FIXTURES, TINY_BERT

OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
PLM_FILES = {"config.json", "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt"}


class Case(NamedTuple):
    config: str
    dev: str
    inputs: list


CASES = {
    "tagger": Case("ner_hash.jsonnet", str(FIXTURES / "data/conll2012/development"),
                   [{"sentence": "Frodo held the ring in London."}, {"tokens": ["RT", "@BBC", ":", "hello"]}]),
    "parser": Case("parse_hash.jsonnet", str(FIXTURES / "data/ptb/craft_dev.tree"),
                   [{"sentence": "The ring was held by Frodo."},
                    {"tokens": ["Bone", "growth"], "pos_tags": ["NN", "NN"]}]),
}


# The `allennlp` command's entry point, run once per command in one fresh process (saves a start-up per command).
COMMANDS = ("import json, sys\nfrom allennlp.__main__ import run\n"
            "for args in json.loads(sys.argv[1]):\n    sys.argv = ['allennlp'] + args\n    run()\n")


def start(commands, log, cwd, **env):
    """Starts a process in `cwd` that runs `allennlp <args>` for each list of args in `commands` (output to the
    file `log`); returns (process, log)."""
    with open(log, "w") as out:
        process = subprocess.Popen(
            [sys.executable, "-c", COMMANDS, json.dumps([[str(a) for a in args] for args in commands])], cwd=cwd,
            env={**os.environ, **OFFLINE, **env}, stdout=out, stderr=subprocess.STDOUT)
    return process, log


def finish(*started):
    for process, log in started:
        assert process.wait(timeout=600) == 0, log.read_text()[-6000:]


def predict(model, reader, inputs):
    predictor = Predictor.from_archive(Archive(model, Params({}), reader, reader, None),
                                       model.default_predictor)
    return [json.loads(json.dumps(predictor.predict_json(i))) for i in inputs]


@pytest.fixture(scope="module")
def moved(tmp_path_factory):
    """Trains the tagger and the parser from a copy of tiny-bert, records what the models as trained predict, moves
    the archives away, deletes the runs and the PLM copy, then, in a fresh offline process per model in another
    directory, runs `allennlp predict` and `allennlp evaluate`."""
    root = tmp_path_factory.mktemp("moved")
    plm = root / "plm" / "tiny-bert"
    shutil.copytree(TINY_BERT, plm)
    env = {"PLM": str(plm), "EPOCHS": "1", "MAX_INSTANCES": "8", "OMP_NUM_THREADS": "1"}
    finish(*[start([["train", CONFIGS / case.config, "-s", root / name]], root / f"{name}-train.log", root, **env)
             for name, case in CASES.items()])  # both at once: 2 cores

    results = {}
    elsewhere, other_cwd = root / "elsewhere", root / "other_cwd"
    elsewhere.mkdir(), other_cwd.mkdir()
    for name, case in CASES.items():
        run = root / name
        # The model as trained: built from the PLM directory, then the trained weights.
        config = Params.from_file(str(run / "config.json"))
        model = Model.load(config.duplicate(), serialization_dir=str(run), weights_file=str(run / "best.th"))
        reader = DatasetReader.from_params(config.duplicate().pop("dataset_reader"))
        with tarfile.open(run / "model.tar.gz") as archive:
            members = archive.getnames()
            index = json.load(archive.extractfile("transformers/index.json"))
            texts = {m.name: archive.extractfile(m).read().decode("utf-8", "replace") for m in archive.getmembers()
                     if m.isfile() and m.name != "weights.th"}
        results[name] = {"reference": predict(model, reader, case.inputs), "members": members, "index": index,
                         "texts": texts,
                         "training_metrics": json.loads((run / "metrics.json").read_text()),
                         "archive": elsewhere / f"{name}.tar.gz"}
        shutil.move(str(run / "model.tar.gz"), str(results[name]["archive"]))
        shutil.rmtree(run)
        (other_cwd / f"{name}.jsonl").write_text("".join(json.dumps(i) + "\n" for i in case.inputs))
    shutil.rmtree(root / "plm")

    started = []
    for name, case in CASES.items():
        archive = results[name]["archive"]
        started.append(start([["predict", archive, f"{name}.jsonl", "--output-file", f"{name}.predictions.jsonl",
                               "--silent"],
                              ["evaluate", archive, case.dev, "--output-file", f"{name}.metrics.json"]],
                             root / f"{name}-load.log", other_cwd))
    finish(*started)
    for name in CASES:
        results[name]["predicted"] = [json.loads(line) for line in
                                      (other_cwd / f"{name}.predictions.jsonl").read_text().splitlines()]
        results[name]["evaluated"] = json.loads((other_cwd / f"{name}.metrics.json").read_text())
    return results


@pytest.mark.parametrize("name", CASES)
def test_archive_carries_the_plm_config_and_tokenizer_but_not_its_weights(moved, name):
    members = moved[name]["members"]
    plm = {m.split("/", 2)[2] for m in members if m.startswith("transformers/tiny-bert/")}
    assert plm == PLM_FILES  # no model.safetensors: the PLM's weights are in weights.th
    assert moved[name]["index"] == {"archive:tiny-bert": "tiny-bert"}  # the PLM by its archived copy, not a path


@pytest.mark.parametrize("name", CASES)
def test_archive_holds_no_path_of_the_training_machine(moved, name):
    """config.json names the PLM by its copy (`archive:tiny-bert`) and the data by file name; the serialization
    folder's map from the training paths (`transformers/sources.json`) stays out."""
    texts = moved[name]["texts"]
    assert "transformers/sources.json" not in texts and set(texts) >= {"config.json", "transformers/index.json"}
    for member, text in texts.items():
        assert "/tmp/" not in text and str(FIXTURES) not in text, member
    config = json.loads(texts["config.json"])
    assert config["dataset_reader"]["token_indexers"]["tokens"]["model_name"] == "archive:tiny-bert"
    assert "/" not in config["train_data_path"] and "/" not in config["validation_data_path"]


@pytest.mark.parametrize("name", CASES)
def test_predict_offline_after_run_and_plm_are_deleted(moved, name):
    assert moved[name]["predicted"] == moved[name]["reference"]
    assert all(len(p["codes"]) == len(p["words"]) > 0 for p in moved[name]["predicted"])


@pytest.mark.parametrize("name", CASES)
def test_evaluate_offline_after_run_and_plm_are_deleted(moved, name):
    # Same weights, same dev sentences, same batches: the scores of the training run's validation.
    evaluated, training = moved[name]["evaluated"], moved[name]["training_metrics"]
    assert len(evaluated) > 5
    assert evaluated == pytest.approx({k: training[f"validation_{k}"] for k in evaluated}, rel=1e-9)


@pytest.mark.parametrize("name", CASES)
def test_load_archive_in_python_after_run_and_plm_are_deleted(moved, name):
    archive = load_archive(moved[name]["archive"])
    assert predict(archive.model, archive.dataset_reader, CASES[name].inputs) == moved[name]["reference"]
    assert archive.config.as_dict()["model"]["text_field_embedder"]["token_embedders"]["tokens"][
        "model_name"] == "archive:tiny-bert"  # the archive's config names its copy; loading used it


def test_hub_name_is_saved_from_the_hub_cache(tmp_path):
    # A hub name (not a directory): the config and tokenizer are saved with save_pretrained, here offline from
    # a Hugging Face cache that holds the model.
    snapshot = tmp_path / "cache" / "models--someone--tiny-bert" / "snapshots" / "0123abcd"
    shutil.copytree(TINY_BERT, snapshot)
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text("0123abcd")
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"dataset_reader": {"token_indexers": {"tokens": {
        "type": "pretrained_transformer_mismatched", "model_name": "someone/tiny-bert"}}}}))
    code = ("from bitcode_allennlp.host.archival import add_transformer_files; "
            f"print(add_transformer_files({str(run)!r}))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                            env={**os.environ, **OFFLINE, "HF_HUB_CACHE": str(tmp_path / "cache")})
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.split() == ["['transformers']"]
    assert json.loads((run / "transformers" / "index.json").read_text()) == {"someone/tiny-bert": "tiny-bert"}
    saved = {p.name for p in (run / "transformers" / "tiny-bert").iterdir()}
    assert {"config.json", "tokenizer.json", "tokenizer_config.json"} <= saved and "model.safetensors" not in saved
    from transformers import AutoTokenizer

    words = ["Frodo", "held", "the", "ring"]
    assert (AutoTokenizer.from_pretrained(str(run / "transformers" / "tiny-bert"))(words, is_split_into_words=True)
            == AutoTokenizer.from_pretrained(str(TINY_BERT))(words, is_split_into_words=True))


def test_a_frozen_plm_in_a_package_is_named_by_package_and_found_wherever_it_is_installed(tmp_path):
    """A frozen PLM inside an installed Python package (here a copy of tiny-bert in a `site-packages` folder on
    PYTHONPATH): the archive names it `package:tinyplm/model`, not the trainer's path, and `allennlp predict` in
    another environment reads that environment's copy; without the package it is one line naming what to install."""
    sites = {name: tmp_path / name / "lib" / "site-packages" for name in ("trainer", "user")}
    for site_dir in sites.values():
        (site_dir / "tinyplm").mkdir(parents=True)
        (site_dir / "tinyplm" / "__init__.py").write_text("")
        shutil.copytree(TINY_BERT, site_dir / "tinyplm" / "model")
    env = {"PLM": str(sites["trainer"] / "tinyplm" / "model"), "FREEZE_PLM": "true", "EPOCHS": "1",
           "MAX_INSTANCES": "8", "PYTHONPATH": str(sites["trainer"])}
    finish(start([["train", CONFIGS / "ner_hash.jsonnet", "-s", tmp_path / "run"]], tmp_path / "train.log", tmp_path,
                 **env))
    archive = tmp_path / "model.tar.gz"
    shutil.move(str(tmp_path / "run" / "model.tar.gz"), str(archive))
    with tarfile.open(archive) as opened:
        config = json.load(opened.extractfile("config.json"))
        index = json.load(opened.extractfile("transformers/index.json"))
    embedder = config["model"]["text_field_embedder"]["token_embedders"]["tokens"]
    assert embedder["type"] == "frozen_plm_words" and embedder["model_name"] == "package:tinyplm/model"
    assert index == {"package:tinyplm/model": "model"} and str(tmp_path) not in json.dumps(config)
    shutil.rmtree(sites["trainer"])  # the trainer's environment is gone
    (tmp_path / "in.jsonl").write_text(json.dumps({"sentence": "Frodo held the ring."}) + "\n")
    predict_args = [["predict", archive, "in.jsonl", "--output-file", "out.jsonl", "--silent"]]
    finish(start(predict_args, tmp_path / "user.log", tmp_path, PYTHONPATH=str(sites["user"])))
    [predicted] = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert len(predicted["codes"]) == len(predicted["words"]) == 5
    process, log = start(predict_args, tmp_path / "none.log", tmp_path, PYTHONPATH="")
    assert process.wait(timeout=600) != 0
    lines = [line for line in log.read_text().splitlines() if line.strip()]
    assert any(line.endswith("package:tinyplm/model: the PLM comes from the Python package 'tinyplm', which is "
                             "not installed here as a package (pip install tinyplm)") for line in lines), lines[-3:]
    assert not any("Traceback" in line for line in lines)
