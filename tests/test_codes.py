"""Tests of bitcode_allennlp.common.codes and the `Codes` value (bitcode_allennlp.common.code_value): the bit / int /
hex conventions of word codes."""
import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from bitcode_allennlp.common.codes import bits_to_ints, bits_to_signs, ints_to_bits, scores_to_bits, signs_to_bits
from bitcode_allennlp.common.code_format import hex_to_bits, hex_to_int, int_to_hex, ints_to_hex, num_hex_digits
from bitcode_allennlp.common.code_value import Codes, HexCodeError


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


# ------------------------------------------------------------------------------------------------- the Codes value
def random_codes(rng, num_bits, shape):
    """uint64 codes of `shape` below 2 ** K (the high bits too, not only small values)."""
    return rng.integers(0, 1 << num_bits, size=shape, dtype=np.uint64)  # shape


@pytest.mark.parametrize("num_bits", range(1, 64))
def test_codes_value_agrees_with_the_old_functions(num_bits):
    from bitcode_allennlp.common.code_format import pack_bits, uint64_to_hex, unpack_bits

    rng = np.random.default_rng(num_bits)
    packed = random_codes(rng, num_bits, 40)  # (40,)
    packed[:2] = [0, (1 << num_bits) - 1]  # the smallest and largest code
    value = Codes(packed, num_bits)
    old_bits = unpack_bits(packed, num_bits)  # (40, K) uint8
    assert value.hex == uint64_to_hex(packed, num_bits)
    assert value.ints == packed.tolist() == [hex_to_int(h, num_bits) for h in value.hex]
    assert value.bits.dtype == bool and (value.bits == old_bits.astype(bool)).all()
    assert value.bit_lists == [hex_to_bits(h, num_bits) for h in value.hex]
    assert (value.signs == old_bits.astype(np.int8) * 2 - 1).all()
    assert Codes.from_hex(value.hex, num_bits) == value
    assert Codes.from_hex([h.upper() for h in value.hex], num_bits) == value
    assert Codes.from_bits(old_bits) == value and Codes.from_bits(value.bits) == value
    assert (pack_bits(value.bits) == value.packed).all()
    tensor_bits = torch.from_numpy(value.bits)  # (40, K)
    assert Codes.from_bits(tensor_bits) == value
    assert value.to_tensor().tolist() == bits_to_ints(tensor_bits).tolist()
    assert torch.equal(value.bits_tensor(), tensor_bits)
    assert torch.equal(value.signs_tensor(), bits_to_signs(tensor_bits))
    assert torch.equal(Codes.packed_tensor(tensor_bits), bits_to_ints(tensor_bits))
    assert Codes(value.to_tensor(), num_bits) == value


def test_codes_value_of_sentences():
    rng = np.random.default_rng(0)
    packed = random_codes(rng, 24, (3, 5))  # (sentences, words)
    value = Codes(packed, 24)
    assert value.shape == (3, 5) and len(value) == 3
    assert value.hex == ints_to_hex(torch.from_numpy(packed.astype(np.int64)), 24)  # nested, as before
    assert value.bits.shape == (3, 5, 24)
    assert value[1] == Codes(packed[1], 24) and value[1, :2].hex == value.hex[1][:2]
    assert value[2, 0].hex == [value.hex[2][0]]  # one code: a one-element list, as `ints_to_hex`
    assert Codes.concatenate([value[0], value[1]]).hex == value.hex[0] + value.hex[1]
    assert value != Codes(packed, 25) and value != Codes(packed[:2], 24)
    assert repr(Codes([0xA0F123], 24)) == "Codes(num_bits=24, shape=(1,), hex=['a0f123'])"
    assert Codes.empty(10).hex == [] and Codes.empty(10).bits.shape == (0, 10)


def test_codes_from_scores_exact_zero_is_bit_zero():
    scores = torch.tensor([[1.5, -0.2, 0.0, -0.0, 1e-9]])  # (1, 5)
    expected = [[True, False, False, False, True]]
    assert Codes.from_scores(scores).bits.tolist() == expected
    assert Codes.from_scores(scores.numpy()).bits.tolist() == expected
    assert Codes.from_scores(scores.bfloat16()).bits.tolist() == expected  # (1e-9 is 0 in float16)
    assert Codes.score_bits(scores).tolist() == expected
    assert Codes.packed_tensor(scores).tolist() == [0b10001]
    assert Codes.from_scores(scores) == Codes.from_bits(scores_to_bits(scores))
    with pytest.raises(TypeError, match="scores must be real numbers"):
        Codes.from_scores(np.array([["a"]]))


@pytest.mark.parametrize("make, error, message", [
    (lambda: Codes([1.0], 4), TypeError, re.escape("codes must be integers in [0, 2 ** 4) (4-bit codes), got 1.0 "
                                                   "(entry 0, a float)")),
    (lambda: Codes(np.array([3, 1.5]), 4), TypeError, re.escape("got 1.5 (entry 1, a float64 array)")),
    (lambda: Codes([True], 4), TypeError, re.escape("got True (entry 0, a bool)")),
    (lambda: Codes([3, 16], 4), ValueError, re.escape("got 16: code 10 (entry 1) has bits set above its K = 4 bits")),
    (lambda: Codes([-1], 4), ValueError, re.escape("got -1 (entry 0)")),
    (lambda: Codes([1], 64), ValueError, re.escape("num_bits must be an integer in 1..63")),
    (lambda: Codes([1], 0), ValueError, re.escape("num_bits must be an integer in 1..63")),
    (lambda: Codes.from_hex(["7ff"], 10), ValueError, re.escape("code 1: hex code '7ff' does not fit in 10 bits")),
    (lambda: Codes.from_hex(["a3f00c", "0x12"], 24), ValueError,
     re.escape("code 2: a 24-bit code has 6 hex digits, got '0x12'")),
    (lambda: Codes.from_hex(["a0_f12"], 24), ValueError, re.escape("code 1: not a hex code: 'a0_f12'")),
    (lambda: Codes.from_hex([5], 4), ValueError, re.escape("code 1: code 5 is a int, expected a string")),
    (lambda: Codes.from_hex("abc", 12), ValueError, "hex codes must be a list of strings"),
    (lambda: Codes.from_bits([[0.5, 1]]), TypeError, re.escape("bits must be 0 or 1 (bools, or integers 0 and 1), "
                                                               "got 0.5 (entry [0, 0], a float)")),
    (lambda: Codes.from_bits([[1, 2]]), ValueError, re.escape("got 2 (entry [0, 1])")),
    (lambda: Codes.from_bits(np.ones((2, 64), bool)), ValueError, "the last dimension of bits"),
    (lambda: Codes.from_bits(torch.ones(64, dtype=torch.bool)), ValueError, "the last dimension of bits"),
])
def test_codes_value_refuses_with_the_format_messages(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_codes_value_is_immutable_and_hex_error_names_the_code():
    value = Codes(np.array([1, 2], dtype=np.uint64), 4)
    with pytest.raises(ValueError, match="read-only"):
        value.packed[0] = 3
    with pytest.raises(AttributeError, match="immutable"):
        value._num_bits = 5
    with pytest.raises(HexCodeError) as caught:
        Codes.from_hex(["a", "b", "g"], 4)
    assert caught.value.index == 2 and caught.value.reason.startswith("not a hex code: 'g'")
    assert str(caught.value) == f"code 3: {caught.value.reason}"


def test_the_codes_value_imports_no_torch():
    """The light `allennlp bits` process reads codes files with `Codes` and the codes-line module, without torch."""
    import subprocess
    import sys

    check = ("import sys, bitcode_allennlp.common.code_value, bitcode_allennlp.common.codes_line as line; "
             "line.parse_codes_line('{\"codes\": [\"ab\"], \"num_bits\": 8, \"tags\": [\"O\"]}', None).codes.bits; "
             "print('torch' in sys.modules, 'allennlp' in sys.modules, 'nltk' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False False False", out.stderr[-2000:]


def test_no_module_converts_codes_outside_the_value():
    """The converters of `code_format` and `codes` are the value's internals: the package's modules (and the
    benchmarks) call none of them but through `Codes` (`check_*` and `num_hex_digits` describe the format), nor
    split or shift packed codes themselves (`Codes.halves` gives the 32-bit halves)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    converters = re.compile(r"\b(int_to_hex|ints_to_hex|uint64_to_hex|parse_hex_code|hex_to_int|hex_to_uint64|"
                            r"hex_to_bits|unpack_bits|pack_bits|scores_to_bits|bits_to_ints|ints_to_bits|"
                            r"bits_to_signs|signs_to_bits)\(|>>\s*np\.uint64\(|<<\s*np\.uint64\(|0x[fF]{8}\b")
    inside = {"bitcode_allennlp/common/code_format.py", "bitcode_allennlp/common/codes.py",
              "bitcode_allennlp/common/code_value.py"}
    calling = [str(path.relative_to(root)) for folder in ("bitcode_allennlp", "benchmarks")
               for path in sorted((root / folder).rglob("*.py"))
               if str(path.relative_to(root)) not in inside and converters.search(path.read_text())]
    assert calling == []


def test_halves_split_packed_codes_into_32_bit_halves():
    """`Codes.halves`: (high, low) uint32 of the value's shape, code = high * 2 ** 32 + low."""
    packed = np.array([[0, 1], [2 ** 32 + 5, 2 ** 63 - 1]], dtype=np.uint64)  # (2, 2)
    high, low = Codes(packed, 63).halves()
    assert high.dtype == low.dtype == np.uint32 and high.shape == low.shape == (2, 2)
    assert (high.astype(np.uint64) * np.uint64(2 ** 32) + low == packed).all()
    assert high.tolist() == [[0, 0], [1, 2 ** 31 - 1]] and low.tolist() == [[0, 1], [5, 2 ** 32 - 1]]
    assert Codes(np.array([7], dtype=np.uint64), 24).halves()[0].tolist() == [0]
