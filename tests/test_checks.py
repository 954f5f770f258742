"""`bitcode_allennlp.common.checks`: the shared argument checks, alone and in the constructors that use them."""
import pytest
import torch
from allennlp.common.checks import ConfigurationError

from bitcode_allennlp.common.code_format import check_num_bits
from bitcode_allennlp.code_stage.binary_code_indexer import BinaryCodeIndexer
from bitcode_allennlp.common.checks import check_choice, check_range
from bitcode_allennlp.data.samplers.token_budget import TokenBudgetBatchSampler
from bitcode_allennlp.modules.hash_loss import ContrastiveHashLoss
from bitcode_allennlp.modules.hash_transformer import HashTransformerEncoder
from bitcode_allennlp.training.metrics.code_metrics import CodeMetrics


def test_check_choice():
    check_choice("scheme", "BIO", ("BIO", "IOB1"))
    with pytest.raises(ConfigurationError, match=r"^scheme must be one of 'BIO', 'IOB1', got 'BIOES'$"):
        check_choice("scheme", "BIOES", ("BIO", "IOB1"))
    with pytest.raises(ValueError, match="task must be one of"):
        check_choice("task", "srl", ("ner", "pos"), error=ValueError)


@pytest.mark.parametrize("value, kwargs, message", [
    (0, dict(low=1), "n must be >= 1, got 0"),
    (0.0, dict(low=0, low_open=True), "n must be > 0, got 0.0"),
    (1.0, dict(low=0, high=1, high_open=True), "n must be >= 0 and < 1, got 1.0"),
    (2, dict(low=0, high=1), "n must be >= 0 and <= 1, got 2"),
    (True, dict(low=0), "n must be a number >= 0, got True"),
    ("3", dict(low=0), "n must be a number >= 0, got '3'"),
    (None, dict(low=1), "n must be a number >= 1, got None"),
])
def test_check_range_refuses(value, kwargs, message):
    with pytest.raises(ConfigurationError) as error:
        check_range("n", value, **kwargs)
    assert str(error.value) == message


@pytest.mark.parametrize("value, kwargs", [
    (1, dict(low=1)), (0.5, dict(low=0, low_open=True)), (0.99, dict(low=0, high=1, high_open=True)),
    (1, dict(low=0, high=1)), (None, dict(low=1, optional=True)), (-5, dict()),
])
def test_check_range_accepts(value, kwargs):
    check_range("n", value, **kwargs)


def test_constructors_check_their_arguments():
    with pytest.raises(ConfigurationError, match="max_tokens must be >= 1, got 0"):
        TokenBudgetBatchSampler(max_tokens=0)
    with pytest.raises(ConfigurationError, match="max_subtokens must be >= 1, got 0"):
        TokenBudgetBatchSampler(max_tokens=8, max_subtokens=0)
    TokenBudgetBatchSampler(max_tokens=8, max_subtokens=None)
    with pytest.raises(ConfigurationError, match="temperature must be > 0, got 0"):
        ContrastiveHashLoss(temperature=0)
    with pytest.raises(ConfigurationError, match="head_dim must be >= 1, got 0"):
        HashTransformerEncoder(input_dim=8, num_bits=4, head_dim=0, feedforward_hidden_dim=8)


@pytest.mark.parametrize("build, error", [
    (lambda k: check_num_bits(k), ValueError),
    (lambda k: HashTransformerEncoder(input_dim=8, num_bits=k, head_dim=2, feedforward_hidden_dim=8),
     ConfigurationError),
    (lambda k: BinaryCodeIndexer(num_bits=k), ConfigurationError),
    (lambda k: CodeMetrics(num_bits=k), ConfigurationError),
])
def test_num_bits_checked_once_with_one_message(build, error):
    """K is checked by `code_format.check_num_bits` wherever it is given: the same bound and message."""
    for bad in (0, 64, 24.0, True):
        with pytest.raises(error, match=r"must be an integer in 1\.\.63 \(codes are packed into int64\), got "):
            build(bad)
    build(63)


def test_code_metrics_checks_the_bits_it_is_given():
    metrics = CodeMetrics()  # K from the first batch
    with pytest.raises(ConfigurationError, match=r"CodeMetrics' bits per code must be an integer in 1\.\.63"):
        metrics(torch.ones(1, 2, 64), mask=torch.ones(1, 2, dtype=torch.bool))
