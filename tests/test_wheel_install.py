"""The package works after a regular (non-editable) install, without the repository: the wheel carries the configs and
the fixtures they default to (`bitcode_allennlp.resources`), and `code_stage.experiment`, the demo and `plm.py` find
them there.

The slow test builds the wheel (`pip wheel --no-deps --no-build-isolation`, from a copy of the sources, so the
checkout gets no build/ folder), unpacks it into a fresh venv that sees this environment's installed dependencies
(a .pth naming its site-packages: the .pth files there, among them the editable install's, are not processed) but not
the checkout, and from a folder outside the repository imports the package, resolves configs and fixtures, evaluates
every shipped config with its defaults and reads a few instances of the default data.
"""
import json
import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from bitcode_allennlp import resources
from tests.conftest import CONFIGS, ROOT

BUILD_INPUTS = ["setup.py", "README.md", "requirements.txt", "bitcode_allennlp.pth", "bitcode_allennlp",
                "training_configs", "fixtures"]
"""What setup.py reads to build the wheel (copied to a temporary folder)."""



def test_from_a_checkout_the_repository_folders_are_used():
    assert resources.checkout() == ROOT and resources.root() == ROOT
    assert resources.path("training_configs") == CONFIGS
    from bitcode_allennlp.code_stage.experiment import CONFIGS as experiment_configs, TASKS
    from bitcode_allennlp.demo import CONFIG, SAMPLE
    from bitcode_allennlp.plm import PATHS

    assert experiment_configs == CONFIGS and CONFIG == CONFIGS / "ner_hash.jsonnet"
    assert SAMPLE == ROOT / "fixtures" / "demo"
    assert PATHS["tiny-bert"]() == str(ROOT / "fixtures" / "transformers" / "tiny-bert")
    assert TASKS["ner"]["train"] == ROOT / "fixtures/data/conll2012/train"


def test_a_missing_resource_is_a_clear_error():
    with pytest.raises(FileNotFoundError, match=r"bitcode_allennlp: training_configs/nope\.jsonnet is missing; "
                                                r"looked in the repository checkout"):
        resources.path("training_configs", "nope.jsonnet")


def test_the_wheel_carries_every_default_of_the_configs_experiment_and_demo():
    shipped = set(resources.resource_files(ROOT))
    assert {f"training_configs/{p.name}" for p in CONFIGS.iterdir() if p.suffix in (".jsonnet", ".libsonnet")} \
        <= shipped
    from bitcode_allennlp.host.config_declaration import GROUPS

    # the configs' default files and folders: declared once, in the declaration of the config variables
    defaults = {default for group in GROUPS for variable in group.variables if variable.kind in ("path", "plm")
                for default in (variable.default, *(value for _, value in variable.by_config))
                if isinstance(default, str)}
    from bitcode_allennlp.code_stage.experiment import TASKS
    from bitcode_allennlp.demo import SAMPLE

    defaults |= {str(spec[split].relative_to(ROOT)) for spec in TASKS.values() for split in ("train", "dev")}
    defaults |= {str((SAMPLE / name).relative_to(ROOT)) for name in ("btc_train.conll", "btc_dev.conll")}
    assert len(defaults) > 10
    for default in sorted(defaults):  # a file, or a folder (a PLM, an OntoNotes tree) whose files are all shipped
        files = [default] if (ROOT / default).is_file() else \
            [str(p.relative_to(ROOT)) for p in (ROOT / default).rglob("*") if p.is_file()]
        assert files and set(files) <= shipped, default


INSTALLED_CHECK = r"""
import json, sys, sysconfig
from pathlib import Path

site_packages = Path(sysconfig.get_paths()["purelib"]).resolve()
import bitcode_allennlp
from bitcode_allennlp import resources
from bitcode_allennlp.code_stage.experiment import CONFIGS, TASKS, config_variables
from bitcode_allennlp.demo import CONFIG, SAMPLE
from bitcode_allennlp.plm import PATHS

root = resources.root()
checkout = resources.checkout()
out = {"site_packages": str(site_packages), "package": bitcode_allennlp.__file__,
       "checkout": None if checkout is None else str(checkout), "root": str(root), "configs": str(CONFIGS),
       "demo": [str(CONFIG), str(SAMPLE)], "tiny_bert": PATHS["tiny-bert"](),
       "tasks": {task: [str(spec["train"]), str(spec["dev"])] for task, spec in TASKS.items()},
       "variables": len(config_variables()), "configs_paths": {}, "missing": []}

from allennlp.common import Params
from allennlp.data import DatasetReader
import bitcode_allennlp.plugin  # noqa: F401

def strings(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)
    elif isinstance(value, str):
        yield value

for config in sorted(CONFIGS.glob("*.jsonnet")):  # through AllenNLP's Params and the package's BITCODE_ENV
    params = Params.from_file(str(config)).as_dict(quiet=True)
    paths = [s for s in strings(params) if s.startswith(str(root))]
    out["configs_paths"][config.name] = len(paths)
    out["missing"] += [p for p in paths if not Path(p).exists()]
    if config.name in ("ner_hash.jsonnet", "ner_code.jsonnet", "parse_hash_incremental.jsonnet"):
        reader = DatasetReader.from_params(Params(params["dataset_reader"]))
        instances = []
        for instance in reader.read(params["train_data_path"]):
            instances.append(instance)
            if len(instances) == 3:
                break
        out["instances_" + config.name] = len(instances)
print("RESULT " + json.dumps(out))
"""


PACKAGE_CHECK = r"""
import json, spacy, bitcode_allennlp
model = bitcode_allennlp.load("ner_fixture_model", threads=1)
nlp = spacy.blank("en")
nlp.add_pipe("bitcode_ner", config={"model": "ner_fixture_model"})
doc = nlp("Obama visits Berlin today")
print("RESULT " + json.dumps({"archive": model.archive, "codes": model.encode("Obama visits Berlin today").codes,
                              "spacy": [token._.bitcode for token in doc], "task": model.task}))
"""


@pytest.mark.slow
def test_a_regular_wheel_install_works_outside_the_repository(tmp_path, ner_hash_archive):
    source, dist, venv, work = tmp_path / "source", tmp_path / "dist", tmp_path / "venv", tmp_path / "work"
    source.mkdir()
    work.mkdir()
    for name in BUILD_INPUTS:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(ROOT / name, source / name)
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "OMP_NUM_THREADS",
                                      "MKL_NUM_THREADS") if k in os.environ}
    env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONNOUSERSITE": "1"})

    def run(*command, cwd=work):
        result = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True,
                                timeout=600)
        assert result.returncode == 0, f"{command} failed:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
        return result

    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", dist,
        source)
    [wheel] = dist.glob("bitcode_allennlp-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert "bitcode_allennlp/_resources/training_configs/env.libsonnet" in names
    assert "bitcode_allennlp/_resources/fixtures/demo/btc_train.conll" in names
    assert "bitcode_allennlp.pth" in names and "bitcode_allennlp/code_stage/experiment.py" in names

    run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    new_site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
    old_sites = [path for path in site.getsitepackages() if Path(path).is_dir()]
    # sorts before bitcode_allennlp.pth (the start-up hook needs the dependencies); the directories it names are
    # added to sys.path without processing their .pth files, so the editable install of the checkout stays out
    (new_site / "00_base_site_packages.pth").write_text("".join(path + "\n" for path in old_sites))
    with zipfile.ZipFile(wheel) as archive:  # a pure wheel installs by unpacking into site-packages
        archive.extractall(new_site)

    result = run(python, "-c", INSTALLED_CHECK)
    assert "start-up hook failed" not in result.stderr, result.stderr
    out = json.loads(result.stdout.split("RESULT ", 1)[1])
    installed = Path(out["site_packages"]) / "bitcode_allennlp"
    assert Path(out["package"]).resolve() == installed / "__init__.py"  # not the checkout, not the editable one
    assert out["checkout"] is None and Path(out["root"]) == installed / "_resources"
    assert Path(out["configs"]) == installed / "_resources" / "training_configs"
    for path in [*out["demo"], out["tiny_bert"], *(p for pair in out["tasks"].values() for p in pair)]:
        assert Path(path).exists() and Path(path).is_relative_to(installed / "_resources"), path
    assert out["variables"] > 20
    assert out["missing"] == []
    assert set(out["configs_paths"]) == {p.name for p in CONFIGS.glob("*.jsonnet")}
    assert all(count >= 2 for count in out["configs_paths"].values()), out["configs_paths"]  # train and dev (+ PLM)
    assert out["instances_ner_hash.jsonnet"] == out["instances_ner_code.jsonnet"] == 3
    assert out["instances_parse_hash_incremental.jsonnet"] == 3

    help_text = run(python, "-m", "bitcode_allennlp.code_stage.experiment", "--help").stdout
    assert "hashing stage → re-annotation" in help_text
    printed = run(python, "-m", "bitcode_allennlp.resources", "training_configs/ner_hash.jsonnet").stdout.strip()
    assert Path(printed) == installed / "_resources" / "training_configs" / "ner_hash.jsonnet"
    missing = subprocess.run([str(python), "-m", "bitcode_allennlp.resources", "fixtures/nope"], cwd=work, env=env,
                             capture_output=True, text=True)
    assert missing.returncode == 1 and "fixtures/nope is missing; looked in the copy installed with the package" \
        in missing.stderr

    # A model package (`allennlp bits package`) installs with pip and loads by name, in Python and in spaCy
    from bitcode_allennlp.bits.package import PackageSpec, build_wheel

    model_wheel = build_wheel(PackageSpec(ner_hash_archive, "ner_fixture_model", "0.1", "fixture data"), str(dist))
    run(python, "-m", "pip", "install", "--no-index", "-q", model_wheel)
    out = json.loads(run(python, "-c", PACKAGE_CHECK).stdout.split("RESULT ", 1)[1])
    assert Path(out["archive"]) == new_site / "ner_fixture_model" / "model.tar.gz" and out["task"] == "ner"
    import bitcode_allennlp

    expected = bitcode_allennlp.load(ner_hash_archive).encode("Obama visits Berlin today").codes
    assert out["codes"] == out["spacy"] == expected
