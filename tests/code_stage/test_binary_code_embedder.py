"""`binary_code` indexer and embedder (paper Eq. 9): w = [c_1 b_1, …, c_K b_K], built from the bits, not looked up."""
import random

import pytest
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.data import Batch, Instance, Token, Vocabulary
from allennlp.data.fields import TextField
from allennlp.modules.text_field_embedders import BasicTextFieldEmbedder

from bitcode_allennlp.common.code_format import num_hex_digits
from bitcode_allennlp.common.code_format import hex_to_bits
from bitcode_allennlp.code_stage.binary_code_embedder import BinaryCodeEmbedder
from bitcode_allennlp.code_stage.binary_code_indexer import BinaryCodeIndexer


def test_embedding_is_eq9_computed_by_hand():
    torch.manual_seed(0)
    embedder = BinaryCodeEmbedder(num_bits=3, embedding_dim=6)
    b = embedder.bit_embeddings.detach()  # (3, 2)
    bits = torch.tensor([[[1, 0, 1], [0, 0, 0]]])  # (1, 2, 3)
    out = embedder(bits)  # (1, 2, 6)
    assert out.shape == (1, 2, 6) and embedder.get_output_dim() == 6
    assert torch.equal(out[0, 0], torch.cat([b[0], -b[1], b[2]]))
    assert torch.equal(out[0, 1], torch.cat([-b[0], -b[1], -b[2]]))


def test_flipping_one_bit_changes_exactly_its_slice():
    torch.manual_seed(1)
    embedder = BinaryCodeEmbedder(num_bits=24, embedding_dim=48)
    bits = torch.randint(0, 2, (5, 24))  # (codes, K)
    for i in range(24):
        flipped = bits.clone()
        flipped[:, i] = 1 - flipped[:, i]
        before, after = embedder(bits), embedder(flipped)  # (codes, d)
        changed = (before != after).any(dim=0).nonzero().flatten().tolist()
        assert changed == [2 * i, 2 * i + 1]
        assert torch.equal(after[:, 2 * i: 2 * i + 2], -before[:, 2 * i: 2 * i + 2])


def test_parameters_are_k_times_d_over_k_not_a_table():
    embedder = BinaryCodeEmbedder(num_bits=24, embedding_dim=144)
    assert sum(p.numel() for p in embedder.parameters()) == 144


def test_dimensions_are_checked():
    with pytest.raises(ConfigurationError, match="multiple of num_bits"):
        BinaryCodeEmbedder(num_bits=24, embedding_dim=100)
    with pytest.raises(ConfigurationError, match="set K"):
        BinaryCodeEmbedder(num_bits=8, embedding_dim=16)(torch.zeros(1, 2, 16, dtype=torch.long))
    with pytest.raises(ConfigurationError):
        BinaryCodeIndexer(num_bits=0)


def test_training_noise_flips_bits_at_its_rate_and_only_in_training():
    torch.manual_seed(2)
    bits = torch.randint(0, 2, (200, 50, 24))  # (batch, words, K)
    clean = BinaryCodeEmbedder(num_bits=24, embedding_dim=48)
    noisy = BinaryCodeEmbedder(num_bits=24, embedding_dim=48, bit_flip=0.1)
    noisy.load_state_dict(clean.state_dict())
    noisy.eval()
    assert torch.equal(noisy(bits), clean(bits))  # no noise at evaluation
    noisy.train()
    out, ref = noisy(bits).view(200, 50, 24, 2), clean(bits).view(200, 50, 24, 2)  # (batch, words, K, d/K)
    sign_flipped = (out == -ref).all(-1)  # (batch, words, K)
    assert torch.equal(sign_flipped | (out == ref).all(-1), torch.ones_like(sign_flipped))
    assert abs(sign_flipped.float().mean().item() - 0.1) < 0.005
    with pytest.raises(ConfigurationError, match="bit_flip"):
        BinaryCodeEmbedder(num_bits=24, embedding_dim=48, bit_flip=1.0)


def test_indexer_reads_bits_from_hex_pads_and_masks():
    indexer = BinaryCodeIndexer(num_bits=12)
    codes = [["a3f", "000"], ["fff"]]
    instances = [Instance({"tokens": TextField([Token(c) for c in sentence], {"codes": indexer})})
                 for sentence in codes]
    batch = Batch(instances)
    batch.index_instances(Vocabulary())
    tensors = batch.as_tensor_dict()["tokens"]["codes"]
    assert tensors["bits"].shape == (2, 2, 12)
    assert tensors["bits"][0, 0].tolist() == hex_to_bits("a3f", 12)
    assert tensors["bits"][1, 0].tolist() == [1] * 12 and tensors["bits"][1, 1].tolist() == [0] * 12
    assert tensors["mask"].tolist() == [[True, True], [True, False]]
    embedder = BasicTextFieldEmbedder({"codes": BinaryCodeEmbedder(num_bits=12, embedding_dim=24)})
    embedded = embedder(batch.as_tensor_dict()["tokens"])  # (2, 2, 24)
    assert embedded.shape == (2, 2, 24) and torch.equal(embedded[1, 1], torch.zeros(24))
    with pytest.raises(ValueError, match="does not fit in 12 bits|hex digits"):
        indexer.tokens_to_indices([Token("1fff")], Vocabulary())


@pytest.mark.parametrize("num_bits", [1, 5, 24, 63])
def test_indexer_bits_equal_hex_to_bits_for_every_width(num_bits):
    """The packed-then-shifted bits equal `hex_to_bits` code by code, the top bit of K = 63 included, with
    `token_min_padding_length` padding after the words."""
    rng = random.Random(num_bits)
    width = num_hex_digits(num_bits)
    values = [0, 2 ** num_bits - 1] + [rng.randrange(2 ** num_bits) for _ in range(30)]
    codes = [format(value, f"0{width}x") for value in values]
    indexer = BinaryCodeIndexer(num_bits=num_bits, token_min_padding_length=40)
    instance = Instance({"tokens": TextField([Token(c) for c in codes], {"codes": indexer})})
    batch = Batch([instance])
    batch.index_instances(Vocabulary())
    tensors = batch.as_tensor_dict()["tokens"]["codes"]
    assert tensors["bits"].shape == (1, 40, num_bits) and tensors["bits"].dtype == torch.long
    assert tensors["bits"][0, : len(codes)].tolist() == [hex_to_bits(code, num_bits) for code in codes]
    assert not tensors["bits"][0, len(codes):].any()
    assert tensors["mask"][0].tolist() == [True] * len(codes) + [False] * (40 - len(codes))
