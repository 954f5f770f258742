"""The validation-stage models with `CODE_ENCODER=window` (beyond the paper, issue 17: still codes only, small) and
`CODE_ENCODER=lstm` (beyond the paper, issue 15)."""
import pytest
import torch

from bitcode_allennlp.modules.window_encoder import WindowFeedForwardEncoder
from tests.conftest import build
from tests.code_stage.test_lightweight_model import CODES, renamed_words


@pytest.fixture
def window(monkeypatch):
    monkeypatch.setenv("CODE_ENCODER", "window")
    monkeypatch.setenv("CODE_DIM", "48")
    monkeypatch.setenv("CODE_FF", "128")


@pytest.mark.parametrize("config, codes",
                         [("ner_code.jsonnet", "ner.dev.jsonl"), ("pos_code.jsonnet", "pos.dev.jsonl")])
def test_window_model_reads_codes_only(window, config, codes, tmp_path):
    model, reader, _ = build(config, seed=0, eval_mode=True)
    assert isinstance(model.encoder, WindowFeedForwardEncoder) and model.encoder.get_input_dim() == 48
    assert sum(p.numel() for p in model.parameters()) < 30_000
    runs = []
    for path in (CODES / codes, renamed_words(CODES / codes, tmp_path / codes)):
        instances = list(reader.read(path))
        for instance in instances:
            instance.fields.pop("tags", None)
            reader.apply_token_indexers(instance)
        runs.append(model.forward_on_instances(instances))
    for first, second in zip(*runs):
        assert first["tags"] == second["tags"] and len(first["tags"]) == len(first["words"])
        assert torch.equal(torch.as_tensor(first["logits"]), torch.as_tensor(second["logits"]))


def test_lstm_model_reads_codes_only(monkeypatch):
    monkeypatch.setenv("CODE_ENCODER", "lstm")
    monkeypatch.setenv("CODE_DIM", "48")
    monkeypatch.setenv("CODE_LAYERS", "2")
    model, reader, _ = build("ner_code.jsonnet", seed=0, eval_mode=True)
    lstm = model.encoder._module  # (AllenNLP's `lstm` wrapper around torch.nn.LSTM)
    assert isinstance(lstm, torch.nn.LSTM) and lstm.bidirectional and lstm.num_layers == 2
    assert (lstm.input_size, lstm.hidden_size, model.encoder.get_output_dim()) == (48, 24, 48)
    instances = list(reader.read(CODES / "ner.dev.jsonl"))
    outputs = model.forward_on_instances(instances)
    assert all(len(output["tags"]) == len(output["words"]) for output in outputs)


def test_unknown_encoder_is_refused(monkeypatch):
    monkeypatch.setenv("CODE_ENCODER", "gru")
    with pytest.raises(Exception, match="CODE_ENCODER=\"gru\" is not one of transformer, window, lstm"):
        build("pos_code.jsonnet")
