"""`make model` (bitcode_allennlp/recipes.py) on the fixtures with tiny-bert: train, evaluate and package, with
progress lines while a step runs, one line per finished epoch, a wheel and no absolute path in what it prints or
packages. The real recipes' scores: README ("A model you would use")."""
import io
import json
import zipfile

from bitcode_allennlp import recipes
from tests.conftest import FIXTURES, ROOT


def test_a_recipe_trains_scores_and_packages_a_model(tmp_path, monkeypatch):
    monkeypatch.setattr(recipes, "TICK", 0.5)
    monkeypatch.chdir(tmp_path)
    console = io.StringIO()
    train = FIXTURES / "data" / "conll2012" / "train"
    dev = FIXTURES / "data" / "conll2012" / "development"
    summary = recipes.main(["ner", "--plm", "tiny-bert", "--train", str(train), "--dev", str(dev), "--set",
                            "EPOCHS=2", "MAX_INSTANCES=8", "--name", "ner_tiny_recipe", "--threads", "1"], console)
    printed = console.getvalue()
    lines = printed.splitlines()
    assert lines[1].startswith("1/3 PLM=$(python -m bitcode_allennlp.plm tiny-bert) ")
    assert "  epoch 1/2 done: dev f1-measure-overall" in printed and "  epoch 2/2 done: dev" in printed
    assert any(line.startswith("  epoch ") and ("left" in line or "starting" in line or "batch" in line)
               for line in lines)  # progress while training
    assert "  train: done in" in printed and "  package: done in" in printed
    assert "  per-epoch checkpoints removed (" in printed
    assert not list((tmp_path / "runs" / "model_ner" / "model").glob("*_state_e*.th"))
    wheel = tmp_path / "runs" / "model_ner" / "dist" / "ner_tiny_recipe-0.1.0-py3-none-any.whl"
    assert summary["wheel"] == "runs/model_ner/dist/ner_tiny_recipe-0.1.0-py3-none-any.whl" and wheel.is_file()
    metrics = json.loads((tmp_path / "runs" / "model_ner" / "dev_metrics.json").read_text())
    assert summary["dev"]["f1-measure-overall"] == metrics["f1-measure-overall"]
    assert f"dev f1-measure-overall {100 * metrics['f1-measure-overall']:.2f}" in lines[-2]
    assert lines[-1] == ("the model: pip install runs/model_ner/dist/ner_tiny_recipe-0.1.0-py3-none-any.whl, then in "
                         "Python: bitcode_allennlp.load('ner_tiny_recipe')")
    with zipfile.ZipFile(wheel) as opened:
        card = opened.read("ner_tiny_recipe/MODEL_CARD.md").decode()
    assert "CC BY 4.0" in card and "CODE_HEAD=2" in card
    for text in (printed.replace(str(FIXTURES), "FIXTURES"), card.replace(str(FIXTURES), "FIXTURES")):
        assert str(tmp_path) not in text and str(ROOT) not in text  # only the data paths given on the command line


def test_a_missing_corpus_is_one_line(tmp_path):
    import pytest

    with pytest.raises(SystemExit, match=r"--train .*ner/btc/conll2012/train: no such file or folder"):
        recipes.main(["ner", "--data", str(tmp_path)], io.StringIO())


def test_other_settings_are_named_and_checked():
    """`--setting tags` (NER): the measured tags-first setting, its own reference row and default names; parsing's
    `short`: the recommended variables with 3 epochs; a setting a task does not have is one line naming those it
    has."""
    import pytest

    tags = recipes.recipe_for("ner", "tags")
    assert "CODE_HEAD" not in tags.variables and tags.variables["BETA"] == "0.005"
    assert tags.train == recipes.RECIPES["ner"].train and "79.21" in tags.reference
    assert recipes.recipe_for("ner") is recipes.RECIPES["ner"]
    short, recommended = recipes.recipe_for("parse", "short"), recipes.RECIPES["parse"]
    assert short.variables == {**recommended.variables, "EPOCHS": "3"} and recommended.variables["EPOCHS"] == "6"
    assert short.code_variables == recommended.code_variables and short.committed == "craft_parse_spanhead.json"
    with pytest.raises(SystemExit, match=r"^--setting codes: ner has the settings tags besides the recommended one$"):
        recipes.main(["ner", "--setting", "codes"], io.StringIO())
    with pytest.raises(SystemExit, match=r"^--setting tags: pos has no other setting besides the recommended one$"):
        recipes.main(["pos", "--setting", "tags"], io.StringIO())


def test_other_settings_rows_are_committed():
    """Every setting's reference names the dev scores of its committed result file."""
    for recipe in list(recipes.RECIPES.values()) + list(recipes.OTHER_SETTINGS.values()):
        result = json.loads((ROOT / "benchmarks" / "results" / "full_data" / recipe.committed).read_text())
        assert f"{100 * result['hashing']['scores']['dev']:.2f}" in recipe.reference
        assert f"{100 * result['validation']['scores']['dev']:.2f}" in recipe.reference
