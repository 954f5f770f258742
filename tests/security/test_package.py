"""`allennlp bits package` (bits/package.py) on hostile input: a name that shadows a real package, a version pip
computes differently, metadata values that inject headers, truncated or hostile archives, broken `metrics.json`, an
output folder that cannot be written. Each is refused with one line (`ConfigurationError`, or exit status 1 and no
traceback through the command) and no wheel is written; a good package still builds, with the METADATA pip reads.

The archives are small tar.gz files built here (a `config.json`, a `weights.th`, a vocabulary and the one hostile
member), except the truncated trained archive (`ner_hash_archive`, shared with tests/bits/test_package.py)."""
import email.parser
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from bitcode_allennlp.bits.package import (MAX_NAME, MAX_VERSION, WELL_KNOWN, PackageSpec, build_wheel, name_problem,
                                           normalized, version_problem)
from bitcode_allennlp.host.names import ConfigurationError

CONFIG = {"dataset_reader": {"type": "conll2003"},
          "model": {"type": "hash_crf_tagger", "encoder": {"num_bits": 8}}}


def tar_member(name, data=b"", **fields):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    for field, value in fields.items():
        setattr(info, field, value)
    return info, (io.BytesIO(data) if data else None)


def make_archive(path, *extra, weights=True):
    """A small model.tar.gz: config.json, weights.th (unless `weights` is false), a vocabulary, then `extra`
    members (`tar_member` pairs)."""
    members = [tar_member("config.json", json.dumps(CONFIG).encode()),
               tar_member("vocabulary/labels.txt", b"O\nB-PER\nI-PER\n")]
    if weights:
        members.append(tar_member("weights.th", bytes(range(256)) * 64))
    with tarfile.open(path, "w:gz") as tar:
        for info, data in members + list(extra):
            tar.addfile(info, data)
    return str(path)


@pytest.fixture
def archive(tmp_path):
    (tmp_path / "run").mkdir()
    return make_archive(tmp_path / "run" / "model.tar.gz")


def refused(spec, out, message):
    """build_wheel(spec, out) raises ConfigurationError matching `message`, on one line, and writes nothing."""
    with pytest.raises(ConfigurationError, match=message) as error:
        build_wheel(spec, str(out))
    assert "\n" not in str(error.value) and "\r" not in str(error.value)
    assert not os.path.isdir(out) or not list(Path(out).glob("*.whl"))
    return str(error.value)


def spec(archive, name="acme_ner", version="1.0", licence="CC BY 4.0", **texts):
    return PackageSpec(archive, name, version, licence, **texts)


# ------------------------------------------------------------------------------------------------ names


@pytest.mark.parametrize("name, message", [
    ("numpy", "the name of a well-known package: `pip install` of the wheel would replace"),
    ("torch", "the name of a well-known package"),
    ("bitcode_allennlp", "the name of a well-known package"),
    ("scikit_learn", "the name of a well-known package"),  # PEP 503: the distribution scikit-learn
    ("sitecustomize", "the name of a well-known package"),  # Python imports it at start-up
    ("json", "the name of a standard-library module: the wheel would install but `import json` gives the standard"),
    ("os", "the name of a standard-library module"),
    ("sys", "the name of a standard-library module"),
    ("pytest", "the name of a well-known package"),
    ("pluggy", "the name of the installed distribution 'pluggy' [0-9.]+: `pip install` of the wheel would uninstall"),
    ("class", "a Python keyword"),
    ("Numpy", "lower-case letters, digits and '_'"),
    ("ner-btc", "lower-case letters, digits and '_'"),
    ("a" * 300, f"300 characters, at most {MAX_NAME}"),
])
def test_a_name_that_shadows_a_package_or_breaks_files_is_refused(archive, tmp_path, name, message):
    text = refused(spec(archive, name=name), tmp_path / "dist", rf"^--name '{name[:60]}(\.\.\.)?': {message}")
    assert not (tmp_path / "dist").exists()
    if "well-known" in message or "standard-library" in message or "installed" in message:
        assert "choose a name of your own, e.g. '<lab>_<model>'" in text


def test_the_well_known_list_is_normalized_and_refused():
    assert all(name == normalized(name) for name in WELL_KNOWN) and len(WELL_KNOWN) > 40
    for name in ("numpy", "allennlp_models", "huggingface_hub", "safetensors", "thinc", "tokenizers", "spacy"):
        assert "well-known" in name_problem(name), name


def test_an_installed_distribution_or_module_is_refused_and_a_model_package_is_not(archive, tmp_path, monkeypatch):
    site = tmp_path / "site"
    (site / "acme_util-2.0.dist-info").mkdir(parents=True)  # an installed distribution, not in the known list
    (site / "acme_util-2.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-util\nVersion: 2.0\n")
    (site / "acme_plain.py").write_text("")  # an importable module without distribution metadata
    (site / "acme_ner").mkdir()  # an installed model package (made by this command): its next version is fine
    (site / "acme_ner" / "__init__.py").write_text("ARCHIVE = 'x'\n")
    (site / "acme_ner-1.0.dist-info").mkdir()
    (site / "acme_ner-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: acme_ner\nVersion: 1.0\n")
    (site / "acme_ner-1.0.dist-info" / "entry_points.txt").write_text(
        "[bitcode_allennlp.models]\nacme_ner = acme_ner\n")
    for name in ("acme_util", "acme_plain", "acme_ner"):
        assert name_problem(name) is None, name  # not installed yet
    monkeypatch.syspath_prepend(str(site))
    refused(spec(archive, name="acme_util"), tmp_path / "dist",
            r"^--name 'acme_util': the name of the installed distribution 'acme-util' 2\.0: `pip install` of the "
            r"wheel would uninstall it; choose a name of your own")
    refused(spec(archive, name="acme_plain"), tmp_path / "dist",
            rf"^--name 'acme_plain': the name of a module importable here \({re.escape(str(site))}/acme_plain\.py\)")
    path = build_wheel(spec(archive, name="acme_ner", version="1.1"), str(tmp_path / "dist"))
    assert Path(path).name == "acme_ner-1.1-py3-none-any.whl"


def test_a_folder_in_the_current_directory_is_no_installed_package(archive, tmp_path, monkeypatch):
    work = tmp_path / "work"
    (work / "acme_ner").mkdir(parents=True)  # e.g. where the runs of that model live
    (work / "acme_tool.py").write_text("")
    monkeypatch.chdir(work)
    monkeypatch.syspath_prepend("")  # `python -m allennlp` puts the current folder first
    assert name_problem("acme_ner") is None and name_problem("acme_tool") is None
    assert Path(build_wheel(spec(archive), "dist")).is_file()


# ------------------------------------------------------------------------------------------------ versions


@pytest.mark.parametrize("version, message", [
    ("1.0 beta", "not a PEP 440 version"),
    ("1..0", "not a PEP 440 version"),
    ("one", "not a PEP 440 version"),
    ("", "not a PEP 440 version"),
    ("1.0\n", "not a PEP 440 version"),
    ("v1", "not in PEP 440's normal form: write '1'"),
    ("1.0a", "not in PEP 440's normal form: write '1.0a0'"),
    ("1.0-1", "not in PEP 440's normal form: write '1.0.post1'"),
    ("01.0", "not in PEP 440's normal form: write '1.0'"),
    ("1.0RC1", "not in PEP 440's normal form: write '1.0rc1'"),
    ("1.0+local", r"a local version \(\+local\): PyPI refuses them .* use a public version such as '1.0'"),
    ("1." * 20 + "0", f"41 characters, at most {MAX_VERSION}"),
])
def test_a_version_that_is_not_a_normal_pep440_release_is_refused(archive, tmp_path, version, message):
    refused(spec(archive, version=version), tmp_path / "dist", rf"^--version {re.escape(repr(version))}: {message}")


def test_the_version_check_agrees_with_packaging():
    version_module = pytest.importorskip("packaging.version")
    for text in ("1.0", "0.2.1", "1.0rc1", "1.0a0", "2.0.post1", "1.1.dev3", "1!2.0", "1.0.0", "1.0b2.post3.dev4",
                 "v1.0", "1.0-1", "1.0alpha", "1.0.preview2", "1.0_rc_1", "1.0.r2", "01.02", "1.0RC1", "1.0.dev",
                 "1.0+local.7", "1.0 beta", "1..0", "1.0-", "1.0.", ".1", "1.0+", "1.0post1", "1.0c1", "1\u0661"):
        try:
            expected = str(version_module.Version(text))
        except version_module.InvalidVersion:
            assert "not a PEP 440 version" in (version_problem(text) or ""), text
            continue
        problem = version_problem(text)
        if "+" in expected:
            assert problem.startswith("a local version"), text
        elif expected == text:
            assert problem is None, text
        else:
            assert problem.startswith(f"not in PEP 440's normal form: write {expected!r}"), (text, problem)
            assert version_problem(expected) is None


# ------------------------------------------------------------------------------------------------ metadata values


@pytest.mark.parametrize("option, field, value, message", [
    ("--description", "description", "A model\nRequires-Dist: evil", r"a line break \(\\n\) at character 8"),
    ("--description", "description", "A model\rRequires-Dist: evil", r"a carriage return \(\\r\) at character 8"),
    ("--description", "description", "A model\x00", "the control or format character U\\+0000 at character 8"),
    ("--description", "description", "A model\u2028Requires-Dist: evil", "U\\+2028"),  # a line separator
    ("--description", "description", "A \u202eledom", "U\\+202E"),  # a right-to-left override
    ("--description", "description", "A\tmodel", r"a tab \(\\t\)"),
    ("--description", "description", "x" * 513, "513 characters, at most 512"),
    ("--description", "description", "", "empty"),
    ("--data-licence", "data_licence", "CC BY\nRequires-Dist: evil", r"a line break \(\\n\)"),
    ("--data-licence", "data_licence", "   ", "empty"),
    ("--training-command", "training_command", "allennlp train\n# injected", r"a line break \(\\n\)"),
])
def test_a_metadata_value_that_is_not_one_printable_line_is_refused(archive, tmp_path, option, field, value, message):
    texts = {"description": None, "training_command": None, "licence": "CC BY 4.0"}
    texts["licence" if field == "data_licence" else field] = value
    text = refused(spec(archive, **texts), tmp_path / "dist", rf"^{option} '.*': .*{message}")
    assert "Requires-Dist" not in text or "\\n" in text or "\\r" in text or "\\u2028" in text  # shown escaped


# ------------------------------------------------------------------------------------------------ the archive


def test_a_truncated_trained_archive_is_refused(ner_hash_archive, tmp_path):
    data = Path(ner_hash_archive).read_bytes()
    for name, cut in (("half", data[:len(data) // 2]), ("trailer", data[:-4])):  # the gzip length and CRC: last 8
        (tmp_path / name).mkdir()
        (tmp_path / name / "model.tar.gz").write_bytes(cut)
        archive = str(tmp_path / name / "model.tar.gz")
        refused(spec(archive), tmp_path / name / "dist",
                rf"^{re.escape(archive)}: the archive is truncated or damaged \(.+\); package the model.tar.gz")


def test_an_archive_that_is_not_a_gzipped_tar_is_refused(tmp_path):
    (tmp_path / "model.tar.gz").write_bytes(b"not a model archive\n" * 10)
    refused(spec(str(tmp_path / "model.tar.gz")), tmp_path / "dist", "the archive is truncated or damaged")
    (tmp_path / "empty").mkdir()
    refused(spec(str(tmp_path / "empty")), tmp_path / "dist", r"empty: not a file \(give the model.tar.gz")
    refused(spec(str(tmp_path / "nope.tar.gz")), tmp_path / "dist", "nope.tar.gz: no such model archive")


@pytest.mark.parametrize("member, message", [
    (tar_member("../evil", b"x"), r"the member '\.\./evil' has a '\.\.' in its name"),
    (tar_member("vocabulary/../../evil", b"x"), r"the member 'vocabulary/\.\./\.\./evil' has a '\.\.' in its name"),
    (tar_member("/tmp/evil", b"x"), r"the member '/tmp/evil' has an absolute name"),
    (tar_member("evil", type=tarfile.SYMTYPE, linkname="/etc/passwd"),
     r"the member 'evil' is a symbolic link \(to '/etc/passwd'\)"),
    (tar_member("vocabulary/tokens.txt", type=tarfile.SYMTYPE, linkname="labels.txt"),
     r"the member 'vocabulary/tokens.txt' is a symbolic link"),  # even one that stays inside
    (tar_member("evil", type=tarfile.LNKTYPE, linkname="/etc/passwd"), r"the member 'evil' is a hard link"),
    (tar_member("evil", type=tarfile.CHRTYPE, devmajor=1, devminor=3), r"the member 'evil' is a device"),
    (tar_member("evil", type=tarfile.FIFOTYPE), r"the member 'evil' is a named pipe"),
    (tar_member("tool", b"x", mode=0o4755), r"the member 'tool' has the set-user-ID or set-group-ID bit"),
    (tar_member("./config.json", b"{}"), r"the member 'config.json' appears twice"),
])
def test_an_archive_with_a_hostile_member_is_refused(tmp_path, member, message):
    (tmp_path / "run").mkdir()
    archive = make_archive(tmp_path / "run" / "model.tar.gz", member)
    text = refused(spec(archive), tmp_path / "dist", rf"^{re.escape(archive)}: {message}")
    assert "(not packaged)" in text or "not packaged)" in text
    assert not (tmp_path / "evil").exists() and not Path("/tmp/evil").exists()


def test_an_archive_without_its_config_or_weights_is_refused(tmp_path):
    archive = make_archive(tmp_path / "model.tar.gz", weights=False)
    refused(spec(archive), tmp_path / "dist", rf"^{re.escape(archive)}: no weights.th inside: not a model archive")
    with tarfile.open(tmp_path / "folders.tar.gz", "w:gz") as tar:  # the names are there, as folders
        for name in ("config.json", "weights.th"):
            tar.addfile(tar_member(name, type=tarfile.DIRTYPE)[0])
    refused(spec(str(tmp_path / "folders.tar.gz")), tmp_path / "dist", "folders.tar.gz: no config.json or weights.th "
            "inside")


# ------------------------------------------------------------------------------------------------ metrics.json


@pytest.mark.parametrize("content, message", [
    (b'{"best_validation_f1": 0.5', r"not JSON \(Expecting ',' delimiter at line 1, column 27\)"),
    (b'[{"best_validation_f1": 0.5}]', "a JSON list, not an object of metrics"),
    (b'"best_validation_f1"', "a JSON string, not an object of metrics"),
    (b'{"best_validation_f1": 0.5, "note": "\xff"}', r"not UTF-8 text \(byte 38\)"),
    (b"[" * 100000 + b"]" * 100000, r"not JSON that can be read \(nested too deeply\)"),
])
def test_a_broken_metrics_file_is_refused_naming_it(archive, tmp_path, content, message):
    metrics = Path(archive).parent / "metrics.json"
    metrics.write_bytes(content)
    text = refused(spec(archive), tmp_path / "dist", rf"^{re.escape(str(metrics.resolve()))}: {message}")
    assert text.endswith("fix it, or move it away to package without dev scores")


# ------------------------------------------------------------------------------------------------ the output


def test_an_output_folder_that_cannot_be_written_is_one_line(archive, tmp_path):
    (tmp_path / "a_file").write_text("")
    refused(spec(archive), tmp_path / "a_file", r"^--output-dir .*a_file: is a file; give the folder")
    refused(spec(archive), tmp_path / "a_file" / "below", r"cannot be created: .*a_file is a file, not a folder")
    refused(spec(archive), tmp_path / ("d" * 300), r"cannot create its folder .* \(File name too long\)")
    if Path("/proc/self").is_dir():  # a folder nobody can create, root included
        refused(spec(archive), "/proc/bitcode_allennlp_test", "cannot create its folder")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes into any folder")
def test_a_read_only_output_folder_is_one_line(archive, tmp_path):
    (tmp_path / "locked").mkdir(mode=0o555)
    refused(spec(archive), tmp_path / "locked", "cannot write into its folder")


# ------------------------------------------------------------------------------------------------ the command


def bits_package(*args, cwd):
    return subprocess.run([sys.executable, "-m", "allennlp", "bits", "package", *map(str, args)], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


@pytest.mark.parametrize("case", ["numpy", "injected", "version", "symlink", "truncated", "output"])
def test_the_command_refuses_in_one_line_without_a_traceback(tmp_path, case):
    archive = make_archive(tmp_path / "model.tar.gz",
                           *([tar_member("evil", type=tarfile.SYMTYPE, linkname="/etc/passwd")]
                             if case == "symlink" else []))
    if case == "truncated":
        Path(archive).write_bytes(Path(archive).read_bytes()[:-4])
    (tmp_path / "a_file").write_text("")
    args = {"name": "numpy" if case == "numpy" else "acme_ner", "version": "v1.0" if case == "version" else "1.0",
            "description": "A model\nRequires-Dist: evil" if case == "injected" else "A model",
            "output-dir": tmp_path / ("a_file" if case == "output" else "dist")}
    result = bits_package(archive, "--data-licence", "CC BY 4.0", *(x for k, v in args.items() for x in (f"--{k}", v)),
                          cwd=tmp_path)
    expected = {"numpy": "--name 'numpy': the name of a well-known package",
                "injected": "--description 'A model\\nRequires-Dist: evil': a line break",
                "version": "--version 'v1.0': not in PEP 440's normal form: write '1.0'",
                "symlink": f"{archive}: the member 'evil' is a symbolic link",
                "truncated": f"{archive}: the archive is truncated or damaged",
                "output": f"--output-dir {tmp_path / 'a_file'}: is a file"}[case]
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and errors[0].startswith(f"allennlp bits package: error: {expected}"), result.stderr
    assert not list(tmp_path.rglob("*.whl"))


# ------------------------------------------------------------------------------------------------ a good package


def test_a_good_package_builds_with_the_metadata_pip_reads(archive, tmp_path):
    metrics = Path(archive).parent / "metrics.json"
    metrics.write_text(json.dumps({"best_validation_f1|x": 0.75, "best_validation_flag": True, "epoch": 1}))
    path = build_wheel(spec(archive, name="acme_ner_btc", version="1.0rc1", licence="CC | BY <4.0>",
                            description="NER | [link](http://x) <script>alert(1)</script>",
                            training_command="allennlp train x.jsonnet -s runs | tee log"), str(tmp_path / "dist"))
    assert Path(path) == tmp_path / "dist" / "acme_ner_btc-1.0rc1-py3-none-any.whl"
    with zipfile.ZipFile(path) as wheel:
        metadata_text = wheel.read("acme_ner_btc-1.0rc1.dist-info/METADATA").decode()
        card = wheel.read("acme_ner_btc/MODEL_CARD.md").decode()
    metadata = email.parser.Parser().parsestr(metadata_text)
    assert metadata["Metadata-Version"] == "2.1" and metadata["Name"] == "acme_ner_btc"
    assert metadata["Version"] == "1.0rc1" and metadata["Description-Content-Type"] == "text/markdown"
    assert metadata["Summary"] == "NER | [link](http://x) <script>alert(1)</script>"
    [requires] = metadata.get_all("Requires-Dist")
    assert requires.startswith("bitcode_allennlp>=")
    assert sorted(set(metadata.keys())) == sorted(metadata.keys()) and len(metadata.keys()) == 6
    assert metadata.get_payload() == card
    for line in card.splitlines():  # every table row keeps its columns: a value's `|` is escaped
        if line.startswith("|"):
            assert len(re.findall(r"(?<!\\)\|", line)) == 3, line
    assert "| training data licence | CC \\| BY \\<4.0\\> |" in card
    assert "NER \\| \\[link\\](http://x) \\<script\\>alert(1)\\</script\\>" in card and "<script>" not in card
    assert "| f1\\|x | 75.00 |" in card and "flag" not in card  # a boolean is no score
    assert "\n    allennlp train x.jsonnet -s runs | tee log\n" in card  # a code block is literal
    assert "`O`, `B-PER`, `I-PER`" in card


def test_the_command_builds_a_good_package(tmp_path):
    archive = make_archive(tmp_path / "model.tar.gz")
    result = bits_package(archive, "--name", "acme_ner", "--version", "0.1", "--data-licence", "x", "-o", "my dist",
                          cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    wheel = tmp_path / "my dist" / "acme_ner-0.1-py3-none-any.whl"
    assert result.stdout.splitlines()[:2] == [str(Path("my dist") / wheel.name),
                                              f"  pip install 'my dist/{wheel.name}'"]
    with zipfile.ZipFile(wheel) as files:
        assert files.read("acme_ner/model.tar.gz") == Path(archive).read_bytes()
