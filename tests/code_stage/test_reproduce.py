"""benchmarks/reproduce.py: the grid of the paper's tables, seeds aggregated into mean ± std, results JSON and
markdown, finished runs kept on a second call (on the fixtures with tiny-bert)."""
import json
import statistics
import sys

import pytest
from allennlp.data import DatasetReader

from tests.conftest import FIXTURES, ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import reproduce  # noqa: E402


def test_grid_has_every_cell_of_the_tables_once():
    cells = reproduce.grid(["pos", "ner", "parse"], [1, 2, 3], reproduce.BITS, reproduce.BETAS, reproduce.TAUS)
    assert len(cells) == len(set(cells)) == 3 * 5 + 5 + 3  # Table 1 per task; Tables 2 and 3 add NER cells
    assert ("ner", 24, 0.005, "cos_sign", "hash", 0.1) in cells  # shared by Tables 1, 2 and 3
    assert ("parse", 8, 0.001, "cos_sign", "hash", 0.1) in cells and ("pos", 24, 0.0, "cos_sign", "hash", 0.1) in cells
    with_tau = reproduce.grid(["ner"], [5], reproduce.BITS, reproduce.BETAS, reproduce.TAUS)
    assert [c[5] for c in with_tau] == reproduce.TAUS


def test_count_sentences_agrees_with_the_readers():
    conll2012 = FIXTURES / "data" / "conll2012" / "train"
    trees = FIXTURES / "data" / "ptb" / "craft_train.tree"
    assert reproduce.count_sentences(conll2012) == len(list(DatasetReader.by_name("ontonotes_hash")().read(conll2012)))
    assert reproduce.count_sentences(trees) == len(list(DatasetReader.by_name("ptb_hash")().read(trees)))


def test_mean_and_sample_std():
    stat = reproduce.mean_std([0.5, 0.6, 0.7])
    assert stat["n"] == 3 and stat["mean"] == pytest.approx(60.0) and stat["std"] == pytest.approx(10.0)
    assert reproduce.fmt(stat) == "60.00 ± 10.00"
    assert reproduce.fmt(reproduce.mean_std([0.25])) == "25.00 (n=1)"


def test_fixture_grid_end_to_end(tmp_path):
    argv = ["--fixtures", "--tasks", "ner", "--tables", "1", "3", "--bits", "8", "--betas", "0", "0.005",
            "--seeds", "2", "--epochs", "2", "--code-epochs", "1", "--runs", str(tmp_path / "runs"),
            "--out", str(tmp_path / "results")]
    results = reproduce.main(argv)
    assert json.loads((tmp_path / "results.json").read_text())["cells"] == results["cells"]
    cells = results["cells"]
    assert set(cells) == {"ner/K24_beta0_cos_sign_hash_tau0.1", "ner/K8_beta0.005_cos_sign_hash_tau0.1",
                          "ner/K24_beta0.005_cos_sign_hash_tau0.1"}
    assert len(results["runs"]) == 6
    for name, cell in cells.items():
        runs = [r for r in results["runs"] if r["cell"] == name]
        assert sorted(r["seed"] for r in runs) == [1, 2] == cell["seeds"]
        for stage in ("hashing", "validation"):
            scores = [100 * json.loads((tmp_path / "runs" / name / f"seed{r['seed']}" / f"{stage}_dev_metrics.json")
                                       .read_text())["f1-measure-overall"] for r in runs]
            assert cell[stage]["mean"] == pytest.approx(statistics.fmean(scores))
            assert cell[stage]["std"] == pytest.approx(statistics.stdev(scores))
        assert 0 < cell["trainable_parameters"] < cell["parameters"]["hashing"]  # the PLM is frozen
    k8 = json.loads((tmp_path / "runs" / "ner/K8_beta0.005_cos_sign_hash_tau0.1/seed2/hashing/config.json")
                    .read_text())
    assert k8["model"]["encoder"]["num_bits"] == 8 and k8["random_seed"] == 2
    markdown = (tmp_path / "results.md").read_text()
    assert "### Table 1" in markdown and "### Table 3" in markdown and "### Table 2" not in markdown
    assert "| 8 bits | hashing |" in markdown and "79.60" in markdown  # the paper's β = 0 validation score

    # Same command again: every run is kept, nothing retrains.
    archive = tmp_path / "runs" / "ner/K8_beta0.005_cos_sign_hash_tau0.1/seed1/hashing/model.tar.gz"
    before = archive.stat().st_mtime_ns
    again = reproduce.main(argv)
    assert archive.stat().st_mtime_ns == before
    assert again["cells"] == cells

    # Only the validation stage again (longer), on the same hashing models.
    longer = reproduce.main(argv[:-4] + ["--code-epochs", "2", "--hashing-runs", str(tmp_path / "runs"),
                                         "--runs", str(tmp_path / "runs2"), "--out", str(tmp_path / "results2")])
    for name, cell in longer["cells"].items():
        assert cell["hashing"]["mean"] == pytest.approx(cells[name]["hashing"]["mean"])  # same models, same dev
        assert not (tmp_path / "runs2" / name / "seed1" / "hashing").exists()
    row = longer["runs"][0]["row"]
    assert row["hashing_archive"].startswith(str(tmp_path / "runs"))
    assert "reused from" in (tmp_path / "results2.md").read_text()


def test_full_profile_fine_tunes_the_plm_on_whole_files(tmp_path):
    results = reproduce.main(["--full", "--fixtures", "--tasks", "pos", "--tables", "1", "--bits", "8", "--seeds", "1",
                              "--epochs", "1", "--code-epochs", "1", "--runs", str(tmp_path / "runs"),
                              "--out", str(tmp_path / "results")])
    settings = results["settings"]
    assert settings["profile"] == "full" and settings["freeze_plm"] is False
    assert settings["train_sentences"] == {"pos": None} and settings["dev_sentences"] == {"pos": None}
    run = results["runs"][0]
    config = json.loads((tmp_path / "runs" / run["cell"] / "seed1" / "hashing" / "config.json").read_text())
    embedder = config["model"]["text_field_embedder"]["token_embedders"]["tokens"]
    assert embedder["type"] == "plm_words" and embedder["train_parameters"] is True
    assert all("max_instances" not in config[reader] for reader in ("dataset_reader", "validation_dataset_reader"))
    assert run["trainable_parameters"] > 0.99 * results["cells"][run["cell"]]["parameters"]["hashing"]  # PLM trains
    assert "fine-tuned (as in the paper)" in (tmp_path / "results.md").read_text()
