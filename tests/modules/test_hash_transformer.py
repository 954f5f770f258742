"""HashTransformerEncoder: ego-attention scores are the diagonal of an explicit Q·Kᵀ/√d_h; causal masking."""
import math

import torch
from allennlp.common import Params
from allennlp.modules.seq2seq_encoders import Seq2SeqEncoder

from bitcode_allennlp.modules.hash_transformer import HashTransformerEncoder


def test_ego_scores_equal_explicit_diagonal():
    torch.manual_seed(0)
    layer = HashTransformerEncoder(input_dim=10, num_bits=5, head_dim=3).eval()  # d=10 ≠ K·d_h=15
    x = torch.randn(2, 4, 10)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]], dtype=torch.bool)
    out, ego = layer.forward_with_scores(x, mask)
    assert out.shape == (2, 4, 10) and ego.shape == (2, 4, 5)
    for b in range(2):
        for h in range(5):
            wq = layer.query.weight[h * 3:(h + 1) * 3]
            bq = layer.query.bias[h * 3:(h + 1) * 3]
            wk = layer.key.weight[h * 3:(h + 1) * 3]
            bk = layer.key.bias[h * 3:(h + 1) * 3]
            q, k = x[b] @ wq.T + bq, x[b] @ wk.T + bk  # (words, d_h)
            full = q @ k.T / math.sqrt(3)  # explicit attention matrix of head h
            assert torch.allclose(ego[b, :, h], torch.diagonal(full), atol=1e-6)
    assert torch.equal(out, layer(x, mask))
    assert (out[1, 2:] == 0).all()


def test_padding_does_not_change_real_words():
    torch.manual_seed(1)
    layer = HashTransformerEncoder(input_dim=8, num_bits=4, head_dim=2).eval()
    x = torch.randn(1, 3, 8)
    padded = torch.cat([x, torch.randn(1, 2, 8)], dim=1)
    out_short, ego_short = layer.forward_with_scores(x, torch.ones(1, 3, dtype=torch.bool))
    out_long, ego_long = layer.forward_with_scores(padded, torch.tensor([[1, 1, 1, 0, 0]], dtype=torch.bool))
    assert torch.allclose(out_short, out_long[:, :3], atol=1e-6)
    assert torch.allclose(ego_short, ego_long[:, :3], atol=1e-6)


def test_causal_codes_ignore_later_words():
    torch.manual_seed(2)
    layer = HashTransformerEncoder(input_dim=8, num_bits=6, head_dim=4, causal=True).eval()
    x = torch.randn(1, 5, 8)
    changed = x.clone()
    changed[0, 3:] = torch.randn(2, 8)
    mask = torch.ones(1, 5, dtype=torch.bool)
    out_a, ego_a = layer.forward_with_scores(x, mask)
    out_b, ego_b = layer.forward_with_scores(changed, mask)
    assert torch.allclose(out_a[:, :3], out_b[:, :3], atol=1e-6) and torch.allclose(ego_a[:, :3], ego_b[:, :3])
    assert not torch.allclose(out_a[:, 3:], out_b[:, 3:])
    assert not layer.is_bidirectional()


def test_gradients_reach_query_and_key_through_ego_scores():
    layer = HashTransformerEncoder(input_dim=8, num_bits=4, head_dim=2)
    _, ego = layer.forward_with_scores(torch.randn(2, 3, 8), torch.ones(2, 3, dtype=torch.bool))
    ego.sum().backward()
    assert layer.query.weight.grad.abs().sum() > 0 and layer.key.weight.grad.abs().sum() > 0


def test_builds_from_params():
    layer = Seq2SeqEncoder.from_params(Params({"type": "hash_transformer", "input_dim": 16, "num_bits": 24,
                                               "head_dim": 8, "activation": "relu"}))
    assert isinstance(layer, HashTransformerEncoder) and layer.get_output_dim() == 16 and layer.num_bits == 24


def test_without_residual_is_the_literal_eq8():
    torch.manual_seed(0)
    layer = HashTransformerEncoder(input_dim=16, num_bits=4, head_dim=8, dropout=0.0, residual=False).eval()
    with_residual = HashTransformerEncoder(input_dim=16, num_bits=4, head_dim=8, dropout=0.0).eval()
    with_residual.load_state_dict(layer.state_dict())
    x = torch.randn(2, 5, 16)  # (batch, words, d)
    mask = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])  # (batch, words)
    out, ego = layer.forward_with_scores(x, mask)
    out_r, ego_r = with_residual.forward_with_scores(x, mask)
    assert torch.allclose(ego, ego_r)  # the same attention matrix, the same codes
    # by hand: o = LN(W_o z), h = LN(o + FFN(o)), z from the layer's own attention
    b, n, k, dh = 2, 5, 4, 8
    q = layer.query(x).view(b, n, k, dh).transpose(1, 2)  # (batch, K, words, d_h)
    kk = layer.key(x).view(b, n, k, dh).transpose(1, 2)  # (batch, K, words, d_h)
    v = layer.value(x).view(b, n, k, dh).transpose(1, 2)  # (batch, K, words, d_h)
    scores = (q @ kk.transpose(-1, -2) / dh ** 0.5).masked_fill(~mask[:, None, None, :], float("-inf"))
    z = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, n, k * dh)  # (batch, words, K·d_h)
    o = layer.attention_norm(layer.attention_output(z))  # (batch, words, d)
    h = layer.feedforward_norm(o + layer.feedforward(o)) * mask[..., None]  # (batch, words, d)
    assert torch.allclose(out, h, atol=1e-5)
    assert not torch.allclose(out, out_r, atol=1e-3)


def test_straight_through_signs():
    from bitcode_allennlp.model.code_head import straight_through_signs

    scores = torch.tensor([[[0.5, -2.0], [0.0, 3.0]], [[-0.1, 1.0], [9.0, 9.0]]], requires_grad=True)  # (2, 2, K=2)
    mask = torch.tensor([[True, True], [True, False]])
    codes = straight_through_signs(scores, mask)
    assert codes.tolist() == [[[1, -1], [-1, 1]], [[-1, 1], [1, 1]]]  # sign forward; 0 counts as bit 0 (-1)
    codes.sum().backward()
    sigma = scores.detach()[mask].std()
    expected = ((scores.detach() / sigma).abs() < 1).float() / sigma  # hardtanh'(s/σ) / σ
    assert torch.allclose(scores.grad, expected)


def test_qk_only_gives_the_full_layers_ego_scores_and_passes_its_inputs_through():
    torch.manual_seed(4)
    full = HashTransformerEncoder(input_dim=10, num_bits=5, head_dim=3).eval()
    qk = HashTransformerEncoder(input_dim=10, num_bits=5, head_dim=3, qk_only=True).eval()
    qk.query.load_state_dict(full.query.state_dict())
    qk.key.load_state_dict(full.key.state_dict())
    assert {name.split(".")[0] for name, _ in qk.named_parameters()} == {"query", "key"}  # no value, FFN, norms
    x = torch.randn(2, 4, 10)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]], dtype=torch.bool)
    out, ego = qk.forward_with_scores(x, mask)
    assert torch.allclose(ego, full.forward_with_scores(x, mask)[1], atol=1e-6)  # the explicit diagonal (above)
    assert torch.equal(out, x * mask[..., None])
    qk.train()  # dropout on the inputs of q and k: two calls, two views
    assert not torch.allclose(qk.forward_with_scores(x, mask)[1], qk.forward_with_scores(x, mask)[1])
    assert Seq2SeqEncoder.from_params(Params({"type": "hash_transformer", "input_dim": 10, "qk_only": True})).qk_only
