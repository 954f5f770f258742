"""`window_feedforward` (modules/window_encoder.py) against a naive per-word loop."""
import pytest
import torch
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.modules.seq2seq_encoders import Seq2SeqEncoder

from bitcode_allennlp.modules.window_encoder import WindowFeedForwardEncoder


def naive(encoder, inputs, mask):
    """Every word: the concatenated vectors of its window (zeros outside the sentence or at masked words)."""
    hidden = inputs * mask.unsqueeze(-1)  # (batch, words, dim)
    for conv in encoder.layers:
        batch, words, dim = hidden.shape
        w = encoder.window
        out = torch.zeros(batch, words, conv.out_channels, dtype=inputs.dtype)  # (batch, words, hidden)
        for b in range(batch):
            for i in range(words):
                pieces = [hidden[b, j] if 0 <= j < words else torch.zeros(dim, dtype=inputs.dtype)
                          for j in range(i - w, i + w + 1)]
                weight = conv.weight.permute(0, 2, 1).reshape(conv.out_channels, -1)  # (hidden, (2w+1)·dim)
                out[b, i] = torch.nn.functional.gelu(weight @ torch.cat(pieces) + conv.bias)
        hidden = out * mask.unsqueeze(-1)  # (batch, words, hidden)
    return hidden


@pytest.mark.parametrize("window, layers", [(0, 1), (1, 1), (2, 2)])
def test_matches_the_naive_loop(window, layers):
    torch.manual_seed(0)
    encoder = WindowFeedForwardEncoder(6, 5, window=window, num_layers=layers).double().eval()
    inputs = torch.randn(3, 7, 6, dtype=torch.float64)  # (batch, words, dim)
    mask = torch.tensor([[1] * 7, [1] * 4 + [0] * 3, [1] + [0] * 6], dtype=torch.bool)  # (batch, words)
    assert torch.allclose(encoder(inputs, mask), naive(encoder, inputs, mask), atol=1e-10)


def test_padding_never_leaks_into_words():
    torch.manual_seed(0)
    encoder = WindowFeedForwardEncoder(4, 8, window=2, num_layers=2).eval()
    inputs = torch.randn(2, 6, 4)  # (batch, words, dim)
    mask = torch.tensor([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1]], dtype=torch.bool)
    noisy = inputs.clone()
    noisy[0, 3:] = 1e3  # padding values must not change any word's output
    a, b = encoder(inputs, mask), encoder(noisy, mask)
    assert torch.equal(a, b)
    assert torch.equal(a[0, 3:], torch.zeros(3, 8))
    alone = encoder(inputs[:1, :3], mask[:1, :3])  # the same sentence without padding
    assert torch.allclose(alone, a[:1, :3], atol=1e-6)


def test_registered_and_checked():
    encoder = Seq2SeqEncoder.from_params(Params({"type": "window_feedforward", "input_dim": 48, "hidden_dim": 64}))
    assert encoder.get_input_dim() == 48 and encoder.get_output_dim() == 64 and encoder.window == 1
    with pytest.raises(ConfigurationError, match="window"):
        WindowFeedForwardEncoder(4, 4, window=-1)


def test_encoders_declare_their_sizes_once():
    """Both package encoders answer AllenNLP's interface from `SizedSeq2SeqEncoder` (sizes given at construction)."""
    from bitcode_allennlp.modules.hash_transformer import HashTransformerEncoder
    from bitcode_allennlp.modules.sized_encoder import SizedSeq2SeqEncoder

    window = WindowFeedForwardEncoder(input_dim=48, hidden_dim=64)
    hashing = HashTransformerEncoder(input_dim=16, num_bits=4, head_dim=2, feedforward_hidden_dim=8)
    causal = HashTransformerEncoder(input_dim=16, num_bits=4, head_dim=2, feedforward_hidden_dim=8, causal=True)
    assert all(isinstance(encoder, SizedSeq2SeqEncoder) for encoder in (window, hashing, causal))
    assert [(e.get_input_dim(), e.get_output_dim(), e.is_bidirectional()) for e in (window, hashing, causal)] == [
        (48, 64, False), (16, 16, True), (16, 16, False)]
