"""The validation-stage models with `CODE_ENCODER=window` (beyond the paper, issue 17: still codes only, small).
`CODE_ENCODER=lstm` (issue 15) was removed in 0.3.0: tests/reliability/test_retired_options.py."""
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


def test_unknown_encoder_is_refused(monkeypatch):
    monkeypatch.setenv("CODE_ENCODER", "gru")
    with pytest.raises(Exception, match="CODE_ENCODER=\"gru\" is not one of transformer, window"):
        build("pos_code.jsonnet")
