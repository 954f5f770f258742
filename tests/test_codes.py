"""Tests of bitcode_allennlp.common.codes: the bit / int / hex conventions of word codes."""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from bitcode_allennlp.common.codes import bits_to_ints, bits_to_signs, ints_to_bits, scores_to_bits, signs_to_bits
from bitcode_allennlp.common.code_format import hex_to_bits, hex_to_int, int_to_hex, ints_to_hex, num_hex_digits


def test_scores_to_bits_sign_convention():
    scores = torch.tensor([[1.5, -0.2, 0.0, -0.0, 1e-9]])  # (1, 5)
    bits = scores_to_bits(scores)
    assert bits.dtype == torch.bool
    assert bits.tolist() == [[True, False, False, False, True]]  # exact 0 -> bit 0 -> code -1
    assert bits_to_signs(bits).tolist() == [[1.0, -1.0, -1.0, -1.0, 1.0]]
    assert torch.equal(signs_to_bits(bits_to_signs(bits)), bits)


def test_k24_by_hand():
    # head 0 is the most significant bit: heads 0..3 -> first hex digit, heads 20..23 -> last.
    bits = [1, 0, 1, 0,  0, 0, 0, 0,  1, 1, 1, 1,  0, 0, 0, 1,  0, 0, 1, 0,  0, 0, 1, 1]  # a0f123
    tensor = torch.tensor(bits, dtype=torch.bool)  # (24,)
    code = bits_to_ints(tensor)
    assert code.dtype == torch.long and code.dim() == 0
    assert int(code) == 0xA0F123
    assert ints_to_hex(code, 24) == ["a0f123"]
    assert hex_to_bits("a0f123", 24) == bits
    assert hex_to_bits("A0F123", 24) == bits  # upper case is read (lower case is written)
    for bad in ("0xa0f123", "-a0f12", "a0_f12", " a0f12", "a0f12\n", "+a0f12", "a0f12g", "a0f1２3"):
        with pytest.raises(ValueError, match="hex digits|not a hex code"):
            hex_to_int(bad, 24)
    # single heads
    one_hot = torch.eye(24, dtype=torch.bool)  # (24, 24)
    assert ints_to_hex(bits_to_ints(one_hot)[:2], 24) == ["800000", "400000"]
    assert ints_to_hex(bits_to_ints(one_hot)[-1:], 24) == ["000001"]
    assert ints_to_hex(bits_to_ints(torch.zeros(24, dtype=torch.bool)), 24) == ["000000"]
    assert ints_to_hex(bits_to_ints(torch.ones(24, dtype=torch.bool)), 24) == ["ffffff"]


def test_k_not_multiple_of_four():
    assert num_hex_digits(10) == 3 and num_hex_digits(1) == 1 and num_hex_digits(63) == 16
    bits = [1, 0, 0, 0, 0, 0, 0, 0, 0, 1]  # 2**9 + 1 = 0x201
    assert int(bits_to_ints(torch.tensor(bits))) == 0x201
    assert ints_to_hex([0x201], 10) == ["201"]
    assert ints_to_hex([0x3FF, 0], 10) == ["3ff", "000"]
    assert hex_to_bits("201", 10) == bits
    with pytest.raises(ValueError):
        hex_to_bits("400", 10)  # needs 11 bits
    with pytest.raises(ValueError):
        hex_to_bits("0201", 10)  # wrong number of digits
    with pytest.raises(ValueError):
        int_to_hex(1 << 10, 10)


def test_batched_shapes_and_nested_hex():
    bits = torch.rand(2, 3, 24) > 0.5  # (batch, words, bits)
    ints = bits_to_ints(bits)
    assert ints.shape == (2, 3)
    hexes = ints_to_hex(ints, 24)
    assert len(hexes) == 2 and all(len(row) == 3 for row in hexes)
    assert all(len(h) == 6 for row in hexes for h in row)
    assert torch.equal(ints_to_bits(ints, 24), bits)


def test_k63_limits():
    ones = torch.ones(63, dtype=torch.bool)
    assert int(bits_to_ints(ones)) == (1 << 63) - 1
    assert ints_to_hex(bits_to_ints(ones), 63) == ["7fffffffffffffff"]
    with pytest.raises(ValueError):
        bits_to_ints(torch.ones(64, dtype=torch.bool))
    with pytest.raises(ValueError):
        ints_to_bits(torch.tensor([8]), 3)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 63), st.data())
def test_round_trips(num_bits, data):
    bits = data.draw(st.lists(st.booleans(), min_size=num_bits, max_size=num_bits))
    tensor = torch.tensor(bits)  # (K,)
    code = bits_to_ints(tensor)
    assert 0 <= int(code) < (1 << num_bits)
    assert ints_to_bits(code, num_bits).tolist() == bits
    (hex_code,) = ints_to_hex(code, num_bits)
    assert len(hex_code) == num_hex_digits(num_bits)
    assert hex_to_bits(hex_code, num_bits) == [int(b) for b in bits]
    assert hex_to_int(hex_code, num_bits) == int(code)
    assert torch.equal(signs_to_bits(bits_to_signs(tensor)), tensor)
    # head 0 reads first: the first hex digit carries head 0 (after the unused high bits)
    assert int(hex_code, 16) >> (num_bits - 1) == bits[0]


def test_the_format_is_defined_once_without_torch():
    """`code_format` defines the format (digits per code, the strict parser, encode / decode) in plain Python and
    numpy: it imports neither torch nor AllenNLP, `codes` and `bits.corpus` use its functions (no copies), and no
    other module computes the number of hex digits itself."""
    import subprocess
    import sys
    from pathlib import Path

    import bitcode_allennlp.bits.corpus as corpus
    import bitcode_allennlp.common.code_format as code_format
    import bitcode_allennlp.common.codes as codes

    check = "import sys, bitcode_allennlp.common.code_format; print('torch' in sys.modules, 'allennlp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False False", out.stderr[-2000:]
    for module in (codes, corpus):
        for name in ("MAX_BITS", "check_num_bits", "num_hex_digits", "parse_hex_code", "int_to_hex", "ints_to_hex",
                     "hex_to_int", "hex_to_bits", "hex_to_uint64", "uint64_to_hex", "pack_bits", "unpack_bits"):
            assert getattr(module, name, getattr(code_format, name)) is getattr(code_format, name), (module, name)
    root = Path(__file__).resolve().parents[1]
    computing = [str(path.relative_to(root)) for folder in ("bitcode_allennlp", "benchmarks")
                 for path in sorted((root / folder).rglob("*.py")) if "+ 3) // 4" in path.read_text()]
    assert computing == ["bitcode_allennlp/common/code_format.py"]
