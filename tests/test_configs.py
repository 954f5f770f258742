"""Every shipped config builds (reader, data, vocabulary, model) with its default fixture paths, and every
component we register resolves by name."""
import os

import pytest
from allennlp.common import Params
from allennlp.data import DatasetReader, Vocabulary
from allennlp.models import Model

import bitcode_allennlp.plugin  # noqa: F401
from tests.conftest import CONFIGS, ROOT

SHIPPED = sorted(p.name for p in CONFIGS.glob("*.jsonnet"))


def test_there_are_configs():
    assert {"ner_hash.jsonnet", "pos_hash.jsonnet", "parse_hash.jsonnet", "parse_hash_incremental.jsonnet",
            "ner_code.jsonnet", "pos_code.jsonnet", "parse_code.jsonnet"} <= set(SHIPPED)


@pytest.mark.parametrize("config", SHIPPED)
def test_max_instances_caps_training_sentences_only(config, monkeypatch):
    monkeypatch.setenv("MAX_INSTANCES", "3")
    params = Params.from_file(str(CONFIGS / config))
    assert params["dataset_reader"]["max_instances"] == 3
    assert "max_instances" not in params["validation_dataset_reader"]  # scores are on the whole dev set


@pytest.mark.parametrize("config", SHIPPED)
def test_dev_max_instances_caps_dev_sentences_only(config, monkeypatch):
    monkeypatch.setenv("DEV_MAX_INSTANCES", "5")
    params = Params.from_file(str(CONFIGS / config))
    assert params["validation_dataset_reader"]["max_instances"] == 5
    assert "max_instances" not in params["dataset_reader"]


@pytest.mark.parametrize("config", SHIPPED)
def test_config_builds(config):
    params = Params.from_file(str(CONFIGS / config))
    reader = DatasetReader.from_params(params.pop("dataset_reader"))
    instances = list(reader.read(params.pop("train_data_path")))
    assert instances
    model = Model.from_params(vocab=Vocabulary.from_instances(instances), params=params.pop("model"))
    assert sum(p.numel() for p in model.parameters()) > 0


def test_registered_names_resolve():
    from allennlp.commands.subcommand import Subcommand
    from allennlp.data.samplers import BatchSampler
    from allennlp.data.token_indexers import TokenIndexer
    from allennlp.modules.token_embedders import TokenEmbedder
    from allennlp.training.callbacks.callback import TrainerCallback
    from allennlp.modules.seq2seq_encoders import Seq2SeqEncoder
    from allennlp.predictors import Predictor
    from allennlp.training.learning_rate_schedulers import LearningRateScheduler
    from allennlp.training.metrics import Metric

    from bitcode_allennlp.model.code_head import CodeHead
    from bitcode_allennlp.modules.hash_loss import ContrastiveHashLoss

    expected = {
        DatasetReader: ["ptb_hash", "ontonotes_hash", "conll_columns", "conllu_pos", "ptb_spans", "binary_codes"],
        TokenIndexer: ["binary_code"],
        TokenEmbedder: ["binary_code"],
        Subcommand: ["hash-corpus", "bits"],
        TrainerCallback: ["parameter_count", "throughput"],
        Model: ["hash_crf_tagger", "hash_span_parser"],
        Seq2SeqEncoder: ["hash_transformer"],
        ContrastiveHashLoss: ["contrastive_hash"],
        CodeHead: ["mlp"],
        BatchSampler: ["token_budget"],
        Metric: ["code_metrics", "span_f1_distributed", "evalb_f1"],
        Predictor: ["hash_tagger", "hash_parser"],
        LearningRateScheduler: ["linear_with_warmup_fraction"],
    }
    for base, names in expected.items():
        for name in names:
            assert base.resolve_class_name(name)[0].__module__.startswith("bitcode_allennlp"), (base, name)


HASHING = [c for c in SHIPPED if "_hash" in c]
CODES = [c for c in SHIPPED if "_code" in c]


@pytest.mark.parametrize("config", SHIPPED)
def test_batches_bound_padded_subtokens_only_with_a_plm(config, monkeypatch):
    monkeypatch.setenv("MAX_SUBTOKENS", "3000")
    params = Params.from_file(str(CONFIGS / config))
    for loader in ("data_loader", "validation_data_loader"):
        sampler = params[loader]["batch_sampler"]
        assert sampler["type"] == "token_budget" and sampler["max_tokens"] == 1024
        # codes have no sub-tokens: a padded budget there would change the validation stage's batches
        assert sampler.get("max_subtokens") == (3000 if config in HASHING else None)
    assert params["validation_data_loader"]["batch_sampler"]["shuffle"] is False


@pytest.mark.parametrize("config", HASHING)
def test_beta_zero_baseline_trains_two_views(config, monkeypatch):
    """Algorithm 1 sums two task losses whatever β: the baseline differs by the hash loss alone."""
    monkeypatch.setenv("BETA", "0")
    assert Params.from_file(str(CONFIGS / config))["model"]["two_views"] is True
    monkeypatch.setenv("TWO_VIEWS", "false")
    assert Params.from_file(str(CONFIGS / config))["model"]["two_views"] is False


@pytest.mark.parametrize("config", HASHING)
def test_code_head_only_with_a_positive_weight(config, monkeypatch):
    """CODE_HEAD > 0 (its weight) gives `code_head: {type: "mlp", ...}` with CODE_HEAD_DIM and CODE_HEAD_REACH, and
    the parsers' reader its POS tags (`tag_field`); 0 (the default) leaves both out: the model and the instances
    of the paper's method."""
    params = Params.from_file(str(CONFIGS / config))
    assert "code_head" not in params["model"] and not any(k.startswith("code_head_") for k in params["model"])
    assert "tag_field" not in params["dataset_reader"]
    monkeypatch.setenv("CODE_HEAD", "2")
    monkeypatch.setenv("CODE_HEAD_DIM", "64")
    params = Params.from_file(str(CONFIGS / config))
    assert params["model"]["code_head"].as_dict() == {"type": "mlp", "weight": 2, "hidden_dim": 64, "reach": "plm"}
    monkeypatch.setenv("CODE_HEAD_REACH", "hash_layer")
    assert Params.from_file(str(CONFIGS / config))["model"]["code_head"]["reach"] == "hash_layer"
    parser = params["model"]["type"] == "hash_span_parser"
    for reader in ("dataset_reader", "validation_dataset_reader"):
        assert params[reader].get("tag_field") is (True if parser else None)
    monkeypatch.setenv("CODE_HEAD", "0")
    assert "code_head" not in Params.from_file(str(CONFIGS / config))["model"]


def test_codes_parser_reads_the_hashing_parsers_fenceposts():
    assert Params.from_file(str(CONFIGS / "parse_hash.jsonnet"))["model"]["boundary"] == "split"
    assert Params.from_file(str(CONFIGS / "parse_code.jsonnet"))["model"]["boundary"] == "split"


def test_code_dim_256_is_the_papers_validation_model_size(monkeypatch):
    """Paper Table 1: 0.6M parameters for the POS/NER validation model; 45 tags as the PTB / EWT XPOS tag set."""
    monkeypatch.setenv("CODE_DIM", "256")
    params = Params.from_file(str(CONFIGS / "pos_code.jsonnet"))
    vocab = Vocabulary()
    vocab.add_tokens_to_namespace([f"T{i}" for i in range(45)], "labels")
    model = Model.from_params(vocab=vocab, params=params.pop("model"))
    assert 550_000 < sum(p.numel() for p in model.parameters()) < 650_000


def test_experiment_clears_every_config_variable():
    """`code_stage.experiment` passes each stage exactly its variables: it must know every one the configs read
    (its list is derived from them; a plain scan of the files, comments included, finds the same)."""
    import re

    from bitcode_allennlp.code_stage.experiment import CONFIG_VARIABLES, config_variables

    read = set()
    for path in CONFIGS.iterdir():
        read |= set(re.findall(r'env\.(?:str|num|bool|get|has)\("([A-Z_0-9]+)"', path.read_text()))
    assert {"K", "TRAINING_METRICS", "CHECKPOINT_EVERY", "HEAD_LR", "FREEZE_PLM", "TOKEN_POLICY"} <= read
    assert read == CONFIG_VARIABLES == config_variables()


def test_set_names_every_config_variable(capsys):
    """`--set` refuses a name no config reads, listing the accepted ones: every config variable
    (CHECKPOINT_EVERY included)."""
    from bitcode_allennlp.code_stage.experiment import CONFIG_VARIABLES, main

    with pytest.raises(SystemExit):
        main(["ner", "--out", "unused", "--set", "CHECKPOINT_EVERY=5", "NOT_A_VARIABLE=1"])
    error = capsys.readouterr().err
    assert f"'NOT_A_VARIABLE=1' is not VAR=VALUE with VAR one of {', '.join(sorted(CONFIG_VARIABLES))}" in error
    assert "'CHECKPOINT_EVERY=5' is not" not in error and "CHECKPOINT_EVERY" in error


def test_docs_table_lists_every_config_variable():
    """docs/configs.md's table names every variable the configs read, and nothing else (the retired options have
    their own table after it)."""
    import re

    from bitcode_allennlp.code_stage.experiment import CONFIG_VARIABLES

    from bitcode_allennlp.host.config_variables import RETIRED_HEADING

    text = (ROOT / "docs" / "configs.md").read_text().partition(RETIRED_HEADING)[0]  # not the retired options
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    documented = {name for row in rows for name in re.findall(r"`([A-Z][A-Z_0-9]*)`", row.split("|")[1])}
    assert documented == CONFIG_VARIABLES, (sorted(CONFIG_VARIABLES - documented),
                                            sorted(documented - CONFIG_VARIABLES))


def _imports(path):
    import re

    return re.findall(r"import '([a-z_]+\.libsonnet)'", path.read_text())


def _reads_through_imports(name, seen=None):
    """The variables config `name` reads itself and through the files it imports."""
    from bitcode_allennlp.host.config_variables import variables_read

    seen = set() if seen is None else seen
    if name in seen:
        return set()
    seen.add(name)
    read = variables_read((CONFIGS / name).read_text())
    for imported in _imports(CONFIGS / name):
        read |= _reads_through_imports(imported, seen)
    return read


@pytest.mark.parametrize("config", sorted(p.name for p in CONFIGS.iterdir() if p.name != "env.libsonnet"))
def test_header_points_to_the_docs_and_names_the_configs_own_variables(config):
    """A config's header says `Variables: docs/configs.md` (the one table) and names the variables only it reads
    (none of its imports does), e.g. ner_hash.jsonnet's READER and INPUT_SCHEME; every name it gives is read.
    common.libsonnet's own variables are the shared ones: the table is their list."""
    import re

    from bitcode_allennlp.host.config_variables import variables_read

    header = "".join(line[2:] for line in (CONFIGS / config).read_text().splitlines(True) if line.startswith("//"))
    assert "Variables: docs/configs.md" in header
    named = set(re.findall(r"\b[A-Z][A-Z_0-9]*\b", header.split("Variables:", 1)[1]))
    read = _reads_through_imports(config)
    assert named <= read, sorted(named - read)
    if config != "common.libsonnet":
        inherited = set().union(set(), *(_reads_through_imports(name) for name in _imports(CONFIGS / config)))
        own = variables_read((CONFIGS / config).read_text()) - inherited
        assert own <= named, sorted(own - named)


@pytest.mark.parametrize("config", HASHING)
def test_head_lr_reaches_every_fresh_parameter(config, monkeypatch):
    """With HEAD_LR set, every parameter outside the PLM (and only those) is in the HEAD_LR group, with every
    optional layer switched on: a fresh layer left at the PLM's learning rate barely trains."""
    import re

    monkeypatch.setenv("HEAD_LR", "1e-3")
    monkeypatch.setenv("CODE_HEAD", "1")
    monkeypatch.setenv("PLM_LAYER", "mix")
    params = Params.from_file(str(CONFIGS / config))
    [[patterns, group]] = params["trainer"]["optimizer"]["parameter_groups"]
    assert group == {"lr": 1e-3}
    reader = DatasetReader.from_params(params.pop("dataset_reader"))
    instances = list(reader.read(params.pop("train_data_path")))
    model = Model.from_params(vocab=Vocabulary.from_instances(instances), params=params.pop("model"))
    for name, _ in model.named_parameters():
        in_group = any(re.search(p, name) for p in patterns)
        assert in_group != ("transformer_model" in name), name


def test_config_variables_have_defaults_and_overrides(monkeypatch):
    """`BITCODE_SETTINGS` (`bitcode_allennlp.host.config_env`) gives `env.libsonnet` the declared defaults; the
    environment overrides them."""
    monkeypatch.delenv("K", raising=False)
    default = Params.from_file(str(CONFIGS / "ner_hash.jsonnet")).as_dict()
    assert default["model"]["encoder"]["num_bits"] == 24
    assert os.path.isdir(default["model"]["text_field_embedder"]["token_embedders"]["tokens"]["model_name"])
    monkeypatch.setenv("K", "16")
    assert Params.from_file(str(CONFIGS / "ner_hash.jsonnet")).as_dict()["model"]["encoder"]["num_bits"] == 16
