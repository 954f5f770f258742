"""A model archive from someone else is untrusted (SECURITY.md): loading one can neither write outside its temporary
folder nor run code. Each hostile archive below is a real trained archive with one thing changed, and each must be
refused by `load_archive`, `bitcode_allennlp.load`, the spaCy component and the `allennlp` commands alike."""
import io
import json
import os
import subprocess
import sys
import tarfile

import pytest

from tests.conftest import ROOT, ner_hash_archive  # noqa: F401

SENTINEL_MODULE = "tests.security.sentinel_module"
"""Importing it would record the import in `sys.modules`: a dotted `type` naming it must not import it."""


class Pickled:
    """A pickle that would create `path` when unpickled (the classic hostile weights file)."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (os.mkdir, (self.path,))


def pickled_weights(path):
    import torch

    buffer = io.BytesIO()
    torch.save({"weight": Pickled(path)}, buffer)
    return buffer.getvalue()


def rewrite(source, target, *, config=None, raw_config=None, index=None, extra=(), weights=None):
    """`source` (a model.tar.gz) copied to `target` with its config edited (`config(dict)`) or replaced
    (`raw_config` text), its `transformers/index.json` replaced (`index`), and `extra` members added at the end:
    `("file", name, bytes)`, `("symlink", name, target)`, `("hardlink", name, target)`; `weights` replaces
    `weights.th`."""
    with tarfile.open(source, "r:gz") as old, tarfile.open(target, "w:gz") as new:
        for member in old.getmembers():
            data = old.extractfile(member).read() if member.isfile() else None
            if member.name == "config.json" and (config or raw_config is not None):
                if raw_config is not None:
                    data = raw_config.encode("utf-8")
                else:
                    value = json.loads(data)
                    config(value)
                    data = json.dumps(value).encode("utf-8")
            if member.name == "weights.th" and weights is not None:
                data = weights
            if member.name == "transformers/index.json" and index is not None:
                data = json.dumps(index).encode("utf-8")
            if data is not None:
                member.size = len(data)
            new.addfile(member, io.BytesIO(data) if data is not None else None)
        for kind, name, value in extra:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = len(value)
                new.addfile(info, io.BytesIO(value))
            else:
                info.type = tarfile.SYMTYPE if kind == "symlink" else tarfile.LNKTYPE
                info.linkname = value
                new.addfile(info)
    return str(target)


def config_text(archive):
    with tarfile.open(archive, "r:gz") as tar:
        return tar.extractfile("config.json").read().decode("utf-8")


def set_model_type(value):
    def edit(config):
        config["model"]["type"] = value
    return edit


def set_encoder_type(value):
    def edit(config):
        config["model"]["encoder"]["type"] = value
    return edit


def set_embedder(key, value):
    def edit(config):
        config["model"]["text_field_embedder"]["token_embedders"]["tokens"][key] = value
    return edit


@pytest.fixture(scope="module")
def hostile(ner_hash_archive, tmp_path_factory):  # noqa: F811
    """name -> (hostile archive, what the refusal must say); `outside` is the folder no member may reach."""
    folder = tmp_path_factory.mktemp("hostile")
    outside = tmp_path_factory.mktemp("outside")
    jsonnet = config_text(ner_hash_archive)[:-1] + ', "leak": std.extVar("HOME"), "f": importstr "/etc/hostname"}'
    cases = {
        "traversal": ({"extra": [("file", "../" * 12 + str(outside / "traversal.txt").lstrip("/"), b"x")]},
                      "extract outside the model's folder"),
        "absolute": ({"extra": [("file", str(outside / "absolute.txt"), b"x")]}, "an absolute name"),
        "symlink": ({"extra": [("symlink", "link", str(outside)), ("file", "link/symlink.txt", b"x")]},
                    "a symbolic link"),
        "hardlink": ({"extra": [("hardlink", "hard", "/etc/hostname")]}, "a hard link"),
        "dotted model type": ({"config": set_model_type(SENTINEL_MODULE + ".Model")}, "not a registered name"),
        "dotted encoder type": ({"config": set_encoder_type("os.system")}, "not a registered name"),
        "jsonnet config": ({"raw_config": jsonnet}, "read as plain JSON"),
        # the first config.json is checked by reading the stream, the last would be extracted over it
        "second config": ({"extra": [("file", "config.json", jsonnet.encode("utf-8"))]}, "appears twice"),
        "pickled weights": ({"weights": pickled_weights(outside / "pickled")}, "not plain tensors"),
        "index outside": ({"index": {"archive:tiny-bert": "../../etc"}}, "not a folder inside transformers/"),
        "remote code": ({"config": set_embedder("transformer_kwargs", {"trust_remote_code": True})},
                        "sets trust_remote_code (model.text_field_embedder.token_embedders.tokens.transformer_kwargs"
                        ".trust_remote_code): loading would run Python code"),
        "package traversal": ({"config": set_embedder("model_name", "package:json/../../etc")},
                              "not a PLM package name"),
    }
    built = {name: (rewrite(ner_hash_archive, folder / f"{name.replace(' ', '_')}.tar.gz", **edits), says)
             for name, (edits, says) in cases.items()}
    built["outside"] = outside
    return built


CASES = ("traversal", "absolute", "symlink", "hardlink", "dotted model type", "dotted encoder type", "jsonnet config",
         "second config", "pickled weights", "index outside", "remote code", "package traversal")


@pytest.mark.parametrize("case", CASES)
def test_load_archive_refuses_a_hostile_archive_and_nothing_leaks(hostile, case):
    from allennlp.models.archival import load_archive

    from bitcode_allennlp.host.errors import ArchiveError

    archive, says = hostile[case]
    with pytest.raises(ArchiveError) as error:
        load_archive(archive)
    assert str(error.value).startswith(f"{archive}: ") and says in str(error.value)
    assert list(hostile["outside"].iterdir()) == []  # nothing written outside
    assert SENTINEL_MODULE not in sys.modules  # nothing imported


@pytest.mark.parametrize("case", ["traversal", "dotted model type", "jsonnet config"])
def test_the_python_api_and_spacy_refuse_it_too(hostile, case):
    import spacy

    import bitcode_allennlp
    from bitcode_allennlp.host.errors import ArchiveError

    archive, says = hostile[case]
    with pytest.raises(ArchiveError, match=says):
        bitcode_allennlp.load(archive)
    nlp = spacy.blank("en")
    nlp.add_pipe("bitcode_ner", config={"model": archive})  # loaded on first use
    with pytest.raises(ArchiveError, match=says):
        nlp("Obama visits Berlin")
    assert list(hostile["outside"].iterdir()) == [] and SENTINEL_MODULE not in sys.modules


@pytest.mark.parametrize("command", ["predict", "evaluate", "hash-corpus"])
def test_every_command_refuses_it_in_one_line(hostile, tmp_path, command):
    archive, says = hostile["dotted encoder type"]
    data = ROOT / "fixtures/data/conll2012/development"
    lines = tmp_path / "in.jsonl"
    lines.write_text('{"sentence": "Obama visits Berlin"}\n')
    argv = {"predict": [archive, lines], "evaluate": [archive, data],
            "hash-corpus": [archive, data, "-o", tmp_path / "codes.jsonl"]}[command]
    result = subprocess.run([sys.executable, "-m", "allennlp", command, *map(str, argv)], capture_output=True,
                            text=True, cwd=ROOT, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert result.returncode == 1, result.stderr[-2000:]
    assert says in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "codes.jsonl").exists()


def test_a_good_archive_still_loads_and_a_users_own_config_keeps_jsonnet(ner_hash_archive, tmp_path):  # noqa: F811
    """The guard applies while an archive loads, not to the user's own configs (trusted: jsonnet and dotted types
    as AllenNLP reads them)."""
    from allennlp.common import Params
    from allennlp.models.archival import load_archive

    assert load_archive(ner_hash_archive).model.num_bits == 24
    mine = tmp_path / "mine.jsonnet"
    mine.write_text('{"x": std.extVar("BITCODE_TEST_VALUE") + "!"}')
    os.environ["BITCODE_TEST_VALUE"] = "read"
    try:
        assert Params.from_file(str(mine)).as_dict() == {"x": "read!"}
    finally:
        del os.environ["BITCODE_TEST_VALUE"]
    from allennlp.models import Model

    assert Model.resolve_class_name("tests.security.sentinel_module.Model")[0].__name__ == "Model"
    del sys.modules[SENTINEL_MODULE]  # imported by the line above, outside any archive


def test_loading_by_name_runs_no_code_of_the_model_package(tmp_path, monkeypatch):
    """`bitcode_allennlp.load(NAME)` finds the installed package's `model.tar.gz` without importing the package:
    a wheel's `__init__.py` (here one that would create a file) never runs when its model is loaded by name."""
    from bitcode_allennlp.api import archive_of

    site = tmp_path / "site"
    package = site / "acme_hostile_model"
    package.mkdir(parents=True)
    ran = tmp_path / "init_ran"
    (package / "__init__.py").write_text(f"open({str(ran)!r}, 'w').close()\nARCHIVE = '/etc/hostname'\n")
    (package / "model.tar.gz").write_bytes(b"")
    dist_info = site / "acme_hostile_model-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme_hostile_model\nVersion: 1.0\n")
    (dist_info / "entry_points.txt").write_text("[bitcode_allennlp.models]\nacme_hostile_model = acme_hostile_model\n")
    monkeypatch.syspath_prepend(str(site))
    assert archive_of("acme_hostile_model") == str(package / "model.tar.gz")  # not its ARCHIVE
    assert not ran.exists() and "acme_hostile_model" not in sys.modules
    (package / "model.tar.gz").unlink()
    with pytest.raises(FileNotFoundError, match="holds no model.tar.gz"):
        archive_of("acme_hostile_model")
    assert not ran.exists()


def test_the_plain_json_layer_holds_on_its_own(tmp_path):
    """While an archive loads, AllenNLP's config reader gets plain JSON or an `ArchiveError` (`untrusted_config`),
    whatever `check_archive` saw before: a jsonnet file is never evaluated, a JSON one reads as usual."""
    import allennlp.models.archival  # noqa: F401 (its import installs the guard)
    from allennlp.common import Params

    from bitcode_allennlp.host.archival import untrusted_config
    from bitcode_allennlp.host.errors import ArchiveError

    jsonnet = tmp_path / "config.json"
    jsonnet.write_text('{"leak": std.extVar("HOME")}')
    with untrusted_config("hostile.tar.gz"), pytest.raises(ArchiveError, match="^hostile.tar.gz: .*not JSON"):
        Params.from_file(str(jsonnet))
    plain = tmp_path / "plain.json"
    plain.write_text('{"model": {"type": "x"}}')
    with untrusted_config("good.tar.gz"):
        assert Params.from_file(str(plain)).as_dict() == {"model": {"type": "x"}}
