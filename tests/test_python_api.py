"""The Python API (`bitcode_allennlp.load`, `CodeModel.encode`, `Encoded`) against the predictor that `allennlp predict`
runs, and the examples of docs/python_api.md run as written (on the fixture archives)."""
import json
import os
import re
import subprocess
import sys
import types

import numpy as np
import pytest

import bitcode_allennlp
from bitcode_allennlp.api import CodeModel, Encoded, archive_of, cuda_device, frozen_plm_overrides
from tests.conftest import ROOT

DEMO_ARCHIVE = "runs/demo/model/model.tar.gz"


@pytest.fixture(scope="module")
def ner_model(ner_hash_archive):
    return bitcode_allennlp.load(ner_hash_archive, threads=1)


def test_load_gives_a_model_that_says_what_it_is(ner_model, ner_hash_archive):
    assert isinstance(ner_model, CodeModel) and ner_model.archive == str(ner_hash_archive)
    assert ner_model.task == "ner" and ner_model.num_bits == 24
    assert "O" in ner_model.labels and all(isinstance(label, str) for label in ner_model.labels)
    assert ner_model.plm is not None and ner_model.plm.endswith("tiny-bert")


def test_encode_one_sentence_a_list_and_a_stream(ner_model):
    one = ner_model.encode("Obama visits Berlin today")
    assert isinstance(one, Encoded) and one.words == ["Obama", "visits", "Berlin", "today"]
    assert len(one.codes) == 4 and all(re.fullmatch(r"[0-9a-f]{6}", code) for code in one.codes)
    assert one.ints == [int(code, 16) for code in one.codes]
    assert one.bits.shape == (4, 24) and one.bits.dtype == np.uint8
    assert [int("".join(map(str, row)), 2) for row in one.bits.tolist()] == one.ints
    assert len(one.tags) == 4 and isinstance(one.entities, list)
    many = ner_model.encode(["Obama visits Berlin today", ["Obama", "visits", "Berlin", "today"], ""])
    assert isinstance(many, list) and [e.words for e in many][:2] == [one.words, one.words]
    assert many[0].codes == many[1].codes == one.codes  # raw text and its words: the same
    assert many[2].words == [] and many[2].codes == []

    pulled = []

    def sentences():
        for i in range(10):
            pulled.append(i)
            yield f"sentence number {i}"

    stream = ner_model.encode(sentences(), batch_size=3)
    assert isinstance(stream, types.GeneratorType) and pulled == []  # nothing read before asked
    first = next(stream)
    assert first.words == ["sentence", "number", "0"] and pulled == [0, 1, 2]  # one batch read
    assert len(list(stream)) == 9 and pulled == list(range(10))


def test_encode_gives_what_allennlp_predict_writes(ner_model):
    sentences = [{"sentence": "Taylor Swift plays Wembley tonight"}, {"tokens": ["Rain", "in", "Leeds"]}]
    predicted = ner_model.predictor.predict_batch_json(sentences)
    encoded = ner_model.encode(["Taylor Swift plays Wembley tonight", ["Rain", "in", "Leeds"]])
    assert [e.to_dict() for e in encoded] == [json.loads(json.dumps(p)) for p in predicted]


def test_the_table_aligns_words_tags_entities_and_codes(ner_model):
    one = ner_model.encode("Obama visits Berlin today")
    lines = one.to_table().splitlines()
    assert lines[0].split() == ["word", "tag", "entity", "code", "bits"][:len(lines[0].split())]
    assert len(lines) == 5
    for line, word, tag, code in zip(lines[1:], one.words, one.tags, one.codes):
        assert line.startswith(word) and tag in line.split() and code in line.split()
    starts = {line.index(code) for line, code in zip(lines[1:], one.codes)}
    assert len(starts) == 1  # the code column is aligned


def test_allennlp_bits_table_prints_the_same_table_from_predict_output(ner_model, ner_hash_archive, tmp_path):
    inputs = tmp_path / "input.jsonl"
    inputs.write_text('{"sentence": "Obama visits Berlin today"}\n{"sentence": "Rain in Leeds"}\n')
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    printed = subprocess.run(["allennlp", "predict", str(ner_hash_archive), str(inputs)], env=env,
                             capture_output=True, text=True, check=True).stdout  # "prediction: {...}" lines
    table = subprocess.run(["allennlp", "bits", "table", "-"], input=printed, env=env, capture_output=True,
                           text=True, check=True).stdout
    expected = [e.to_table() for e in ner_model.encode(["Obama visits Berlin today", "Rain in Leeds"])]
    assert table == "\n\n".join(expected) + "\n"


def test_a_parser_gives_trees(parse_hash_archive):
    parser = bitcode_allennlp.load(parse_hash_archive)
    assert parser.task == "parser" and parser.num_bits is not None
    one = parser.encode("The cat sat")
    assert one.tree.startswith("(TOP") and one.tree_json["label"] == "TOP" and one.tags is None
    assert one.tree in one.to_table()


def test_bad_arguments_are_clear_errors(ner_model, tmp_path):
    with pytest.raises(FileNotFoundError, match="neither a model archive nor an installed model package"):
        archive_of(tmp_path / "nope")
    with pytest.raises(ValueError, match="device must be"):
        cuda_device("gpu")
    assert cuda_device("cpu") == -1 and cuda_device("cuda") == 0 and cuda_device("cuda:1") == 1
    with pytest.raises(ValueError, match="batch_size must be at least 1"):
        ner_model.encode(["a"], batch_size=0)
    with pytest.raises(ValueError, match="tokens"):
        ner_model.encode([["fine", ""]])


def test_a_frozen_plm_is_found_in_its_package_wherever_it_is_installed(tmp_path):
    import json as json_module  # a package installed here: stands in for a PLM's PyPI package

    package = os.path.dirname(json_module.__file__)
    config = {"model": {"text_field_embedder": {"token_embedders": {"tokens": {
        "type": "frozen_plm_words", "model_name": "/elsewhere/lib/python3.11/site-packages/json/model"}}}}}
    assert frozen_plm_overrides(config, "a.tar.gz") == {
        "model.text_field_embedder.token_embedders.tokens.model_name": os.path.join(package, "model")}
    config["model"]["text_field_embedder"]["token_embedders"]["tokens"]["model_name"] = \
        "/elsewhere/site-packages/no_such_plm_package/model"
    with pytest.raises(FileNotFoundError, match=r"pip install no-such-plm-package"):
        frozen_plm_overrides(config, "a.tar.gz")
    config["model"]["text_field_embedder"]["token_embedders"]["tokens"]["model_name"] = str(tmp_path / "gone")
    with pytest.raises(FileNotFoundError, match="gone"):
        frozen_plm_overrides(config, "a.tar.gz")
    config["model"]["text_field_embedder"]["token_embedders"]["tokens"]["model_name"] = str(tmp_path)
    assert frozen_plm_overrides(config, "a.tar.gz") == {}  # there: nothing to change
    # another virtual environment's copy that still exists: this environment's copy is read, not that one
    other = tmp_path / "other_venv" / "lib" / "python3.11" / "site-packages" / "json" / "model"
    other.mkdir(parents=True)
    config["model"]["text_field_embedder"]["token_embedders"]["tokens"]["model_name"] = str(other)
    assert frozen_plm_overrides(config, "a.tar.gz") == {
        "model.text_field_embedder.token_embedders.tokens.model_name": os.path.join(package, "model")}
    from bitcode_allennlp.plm import PATHS

    config["model"]["text_field_embedder"]["token_embedders"]["tokens"]["model_name"] = PATHS["minilm"]()
    assert frozen_plm_overrides(config, "a.tar.gz") == {}  # this environment's own (site-packages): nothing to change


def test_loading_prints_nothing_and_imports_no_command(ner_hash_archive):
    code = (f"import sys, bitcode_allennlp\nmodel = bitcode_allennlp.load({str(ner_hash_archive)!r}, threads=1)\n"
            "print(model.encode('Obama visits Berlin').codes)\n"
            "print(sorted(m for m in sys.modules if m.startswith(('allennlp.commands', 'allennlp_models',"
            " 'bitcode_allennlp.bits.command', 'bitcode_allennlp.code_stage.hash_corpus',"
            " 'bitcode_allennlp.demo'))))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT,
                            env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr == ""
    codes, imported = result.stdout.splitlines()
    assert len(eval(codes)) == 3 and imported == "[]"


def python_blocks(page):
    return re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)


def test_the_examples_of_the_page_run(ner_hash_archive, capsys, tmp_path):
    page = ROOT / "docs" / "python_api.md"
    blocks = python_blocks(page)
    assert len(blocks) >= 4 and all(DEMO_ARCHIVE in block or "model." in block or "encoded" in block
                                    for block in blocks)
    namespace = {}
    for block in blocks:  # what the page writes under runs/ goes to a temporary folder
        block = block.replace(DEMO_ARCHIVE, str(ner_hash_archive)).replace('"runs/', f'"{tmp_path}/')
        exec(compile(block, str(page), "exec"), namespace)
    assert (tmp_path / "dist" / "acme_ner_fixture-0.1-py3-none-any.whl").is_file()
    printed = capsys.readouterr().out
    assert "Messi" in printed and "code" in printed.splitlines()[0]


def test_the_package_level_load_shows_the_same_options_as_api_load():
    """`help(bitcode_allennlp.load)` lists every option with its default (the lazy wrapper keeps `import
    bitcode_allennlp` cheap)."""
    import inspect

    import bitcode_allennlp
    from bitcode_allennlp import api

    lazy, real = inspect.signature(bitcode_allennlp.load), inspect.signature(api.load)
    assert [(p.name, p.default) for p in lazy.parameters.values()] == \
        [(p.name, p.default) for p in real.parameters.values()]
    assert all(f"{name} :" in bitcode_allennlp.load.__doc__ for name in real.parameters)


def test_train_and_package_from_python(tmp_path, monkeypatch):
    """`bitcode_allennlp.train` and `package`: a model trained, loaded and packaged without the command line; the
    environment's config variables are not read and the environment is as before afterwards."""
    import json

    import bitcode_allennlp
    from bitcode_allennlp.host.names import ConfigurationError

    monkeypatch.setenv("EPOCHS", "50")  # not read: only the variables given
    before = dict(os.environ)
    archive = bitcode_allennlp.train("ner_hash", tmp_path / "run", {"EPOCHS": 1, "MAX_INSTANCES": 8}, plm="tiny-bert")
    unchanged = lambda: all(os.environ.get(k) == v for k, v in before.items()) and not {  # noqa: E731
        "PLM", "MAX_INSTANCES"} & set(os.environ)  # (imports may add their own variables, e.g. torch's)
    assert unchanged() and archive == str(tmp_path / "run" / "model.tar.gz")
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["epoch"] == 0  # one epoch, not 50
    assert len(bitcode_allennlp.load(archive, threads=1).encode("Obama visits Berlin").codes) == 3
    wheel = bitcode_allennlp.package(archive, "ner_python_tiny", "0.1", "fixture data", tmp_path / "dist")
    assert wheel == str(tmp_path / "dist" / "ner_python_tiny-0.1-py3-none-any.whl") and os.path.isfile(wheel)
    with pytest.raises(ConfigurationError, match=r'EPOCHS="0" must be an integer >= 1'):
        bitcode_allennlp.train("ner_hash", tmp_path / "bad", {"EPOCHS": 0})
    assert not (tmp_path / "bad").exists() and unchanged()
