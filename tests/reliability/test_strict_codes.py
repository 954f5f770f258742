"""One strict check of codes and bits (`bitcode_allennlp.common.code_format.check_codes` / `check_bits`, issue 29 class
10): every public function that takes packed codes or bits -- the format (`code_format`), its torch side (`codes`) and
the Hamming index (`bits.index`) -- refuses what the command line refuses (floats, bools for codes, negative values,
codes wider than K, bits other than 0 and 1) with ``<argument> must be <what>, got <value> (<where>)``, naming the first
offending value and its position; integer arrays of another dtype are converted when nothing is lost."""
import re

import numpy as np
import pytest
import torch

from bitcode_allennlp.bits.index import HammingIndex
from bitcode_allennlp.bits.faiss_index import FaissBinaryIndex, pack_codes
from bitcode_allennlp.bits.hamming import hamming_distances
from bitcode_allennlp.common.code_format import (
    check_bits, check_code, check_codes, hex_to_bits, int_to_hex, ints_to_hex, pack_bits, uint64_to_hex, unpack_bits,
)
from bitcode_allennlp.common.codes import bits_to_ints, bits_to_signs, ints_to_bits

CODES_24 = "must be integers in [0, 2 ** 24) (24-bit codes), got "
DATABASE = np.array([0, 1, 2, 3], dtype=np.uint64)


def small_index(index_type: str = "numpy") -> HammingIndex:
    codes = np.array([0x000001, 0x00ff00, 0xabcdef], dtype=np.uint64)
    index = HammingIndex(codes, 24, np.zeros(3, np.int32), np.arange(3, dtype=np.int32),
                         [{"words": ["a", "b", "c"]}])
    return index.build_search_index(index_type)


# (function, call, exception, fragment of the message)
BAD = [
    # code_format: packed -> hex
    ("uint64_to_hex", lambda: uint64_to_hex([1 << 30], 24), ValueError,
     "codes " + CODES_24 + "1073741824: code 40000000 (entry 0) has bits set above its K = 24 bits"),
    ("uint64_to_hex", lambda: uint64_to_hex(np.array([5, -2, -3]), 24), ValueError,
     "codes " + CODES_24 + "-2 (entry 1)"),
    ("uint64_to_hex", lambda: uint64_to_hex(np.array([1.0, 2.0]), 24), TypeError,
     "codes " + CODES_24 + "1.0 (entry 0, a float64 array)"),
    ("int_to_hex", lambda: int_to_hex(2.0, 24), TypeError,
     "code must be an integer in [0, 2 ** 24) (a 24-bit code), got 2.0 (a float)"),
    ("int_to_hex", lambda: int_to_hex(True, 24), TypeError, "got True (a bool)"),
    ("int_to_hex", lambda: int_to_hex(-1, 24), ValueError,
     "code must be an integer in [0, 2 ** 24) (a 24-bit code), got -1"),
    ("int_to_hex", lambda: int_to_hex(1 << 10, 10), ValueError, "code 400 has bits set above its K = 10 bits"),
    ("int_to_hex", lambda: int_to_hex("a3f00c", 24), TypeError, "got 'a3f00c' (a str)"),
    ("int_to_hex", lambda: int_to_hex([1, 2], 24), TypeError,
     "code must be one integer code, got an array of shape (2,)"),
    ("ints_to_hex", lambda: ints_to_hex([1.5], 24), TypeError, "ints " + CODES_24 + "1.5 (entry 0, a float)"),
    ("ints_to_hex", lambda: ints_to_hex([7, True], 24), TypeError, "ints " + CODES_24 + "True (entry 1, a bool)"),
    ("ints_to_hex", lambda: ints_to_hex(np.array([4.0, 2.5]), 24), TypeError,
     "ints " + CODES_24 + "2.5 (entry 1, a float64 array)"),  # the first value that is not whole
    ("ints_to_hex", lambda: ints_to_hex(np.array([True]), 24), TypeError, "got True (entry 0, a bool array)"),
    ("ints_to_hex", lambda: ints_to_hex([[1, 2], [3, -4, 5]], 24), ValueError, "ints[1] " + CODES_24 + "-4 (entry 1)"),
    ("ints_to_hex", lambda: ints_to_hex([["a3f00c"]], 24), TypeError, "got 'a3f00c' (entry [0, 0], a str)"),
    ("ints_to_hex", lambda: ints_to_hex(torch.tensor([[1, 2], [3, 1 << 24]]), 24), ValueError,
     "code 1000000 (entry [1, 1]) has bits set above its K = 24 bits"),
    ("ints_to_hex", lambda: ints_to_hex(torch.tensor([0.0]), 24), TypeError, "got 0.0 (entry 0, a float32 array)"),
    ("ints_to_hex", lambda: ints_to_hex([1], 64), ValueError, "num_bits must be an integer in 1..63"),
    # code_format: packed <-> bits
    ("pack_bits", lambda: pack_bits([[0, 2]]), ValueError,
     "bits must be 0 or 1 (bools, or integers 0 and 1), got 2 (entry [0, 1])"),
    ("pack_bits", lambda: pack_bits(np.array([[0, 1], [1, -1]])), ValueError, "got -1 (entry [1, 1])"),
    ("pack_bits", lambda: pack_bits(np.array([[0.0, 1.0]])), TypeError, "got 0.0 (entry [0, 0], a float64 array)"),
    ("pack_bits", lambda: pack_bits(np.array([[0.0, 0.5]])), TypeError, "got 0.5 (entry [0, 1], a float64 array)"),
    ("pack_bits", lambda: pack_bits([[1, 0.0]]), TypeError, "got 0.0 (entry [0, 1], a float)"),
    ("pack_bits", lambda: pack_bits(np.zeros((2, 64), dtype=np.uint8)), ValueError, "must be an integer in 1..63"),
    ("pack_bits", lambda: pack_bits(np.array(1)), ValueError, "bits must have a last dimension of K bits"),
    ("unpack_bits", lambda: unpack_bits(np.array([1, 8, 9]), 3), ValueError,
     "codes must be integers in [0, 2 ** 3) (3-bit codes), got 8: code 8 (entry 1) has bits set above its K = 3 bits"),
    ("unpack_bits", lambda: unpack_bits(np.array([-1], dtype=np.int64), 3), ValueError, "got -1 (entry 0)"),
    ("unpack_bits", lambda: unpack_bits(np.array([1.0]), 3), TypeError, "got 1.0 (entry 0, a float64 array)"),
    ("unpack_bits", lambda: unpack_bits(np.array([np.nan]), 3), TypeError, "got nan (entry 0, a float64 array)"),
    ("hex_to_bits", lambda: hex_to_bits("400", 10), ValueError, "hex code '400' does not fit in 10 bits"),
    # codes (torch)
    ("bits_to_ints", lambda: bits_to_ints(torch.tensor([[0, 2, 1]])), ValueError, "bits must be 0 or 1 "
     "(bools, or integers 0 and 1), got 2 (entry [0, 1])"),
    ("bits_to_ints", lambda: bits_to_ints(torch.tensor([[0.0, 1.0]])), TypeError, "a float32 array"),
    ("bits_to_ints", lambda: bits_to_ints(torch.tensor([1, -1], dtype=torch.int8)), ValueError, "got -1 (entry 1)"),
    ("bits_to_ints", lambda: bits_to_ints(torch.ones(64, dtype=torch.bool)), ValueError, "1..63"),
    ("bits_to_ints", lambda: bits_to_ints([[1, 0, 3]]), ValueError, "got 3 (entry [0, 2])"),
    ("ints_to_bits", lambda: ints_to_bits(torch.tensor([8]), 3), ValueError,
     "ints must be integers in [0, 2 ** 3) (3-bit codes), got 8: code 8 (entry 0) has bits set above its K = 3 bits"),
    ("ints_to_bits", lambda: ints_to_bits(torch.tensor([1.0]), 3), TypeError, "got 1.0 (entry 0, a float32 array)"),
    ("ints_to_bits", lambda: ints_to_bits(torch.tensor([True]), 3), TypeError, "got True (entry 0, a bool array)"),
    ("ints_to_bits", lambda: ints_to_bits([3, -1], 3), ValueError, "got -1 (entry 1)"),
    ("ints_to_bits", lambda: ints_to_bits([2.5], 3), TypeError, "got 2.5 (entry 0, a float)"),
    ("bits_to_signs", lambda: bits_to_signs(torch.tensor([0, 1, 2])), ValueError, "got 2 (entry 2)"),
    # bits.index
    ("hamming_distances", lambda: hamming_distances(np.array([-1, 2]), DATABASE), ValueError,
     "queries must be non-negative integers of at most 64 bits (uint64 codes), got -1 (entry 0)"),
    ("hamming_distances", lambda: hamming_distances(np.array([1.5]), DATABASE), TypeError,
     "queries must be non-negative integers of at most 64 bits (uint64 codes), got 1.5 (entry 0, a float64 array)"),
    ("hamming_distances", lambda: hamming_distances(DATABASE, np.array([0, 1, -5])), ValueError,
     "database must be non-negative integers of at most 64 bits (uint64 codes), got -5 (entry 2)"),
    ("hamming_distances", lambda: hamming_distances(DATABASE, np.array([[1, 2]], dtype=np.uint64)), ValueError,
     "database must be a 1-D array of codes, got shape (1, 2)"),
    ("pack_codes", lambda: pack_codes(np.array([3.0]), 8), TypeError, "codes must be integers in [0, 2 ** 8)"),
    ("pack_codes", lambda: pack_codes(np.array([3, 256], dtype=np.uint64), 8), ValueError,
     "code 100 (entry 1) has bits set above its K = 8 bits"),
    ("HammingIndex", lambda: HammingIndex(np.array([1, 2.5]), 24, np.zeros(2, np.int32), np.zeros(2, np.int32)),
     TypeError, "codes " + CODES_24 + "2.5 (entry 1, a float64 array)"),
    ("HammingIndex", lambda: HammingIndex(np.array([1, 1 << 30]), 24, np.zeros(2, np.int32), np.zeros(2, np.int32)),
     ValueError, "code 40000000 (entry 1) has bits set above its K = 24 bits"),
    ("HammingIndex.search", lambda: small_index().search(np.array([1 << 30]), 2), ValueError,
     "queries " + CODES_24 + "1073741824: code 40000000 (entry 0) has bits set above its K = 24 bits"),
    ("HammingIndex.search", lambda: small_index("flat").search([1.0], 2), TypeError, "queries " + CODES_24 + "1.0"),
    ("HammingIndex.search", lambda: small_index().search([True], 2), TypeError, "got True (entry 0, a bool)"),
    ("HammingIndex.search", lambda: small_index().search([1], 2.0), ValueError,
     "k must be a positive integer, got 2.0"),
    ("HammingIndex.radius", lambda: small_index().radius(-1, 2), ValueError,
     "query must be an integer in [0, 2 ** 24) (a 24-bit code), got -1"),
    ("HammingIndex.radius", lambda: small_index("flat").radius(True, 2), TypeError, "got True (a bool)"),
    ("HammingIndex.radius", lambda: small_index().radius(1, 1.5), ValueError, "radius must be >= 0 (an integer)"),
    ("HammingIndex.candidate_sets", lambda: list(small_index().candidate_sets(np.array([-3]), 1)), ValueError,
     "queries " + CODES_24 + "-3 (entry 0)"),
    ("FaissBinaryIndex.build", lambda: FaissBinaryIndex.build(np.array([1, 1 << 9], dtype=np.uint64), 8), ValueError,
     "code 200 (entry 1) has bits set above its K = 8 bits"),
]


@pytest.mark.parametrize("function, call, error, fragment", BAD, ids=[f"{row[0]}-{i}" for i, row in enumerate(BAD)])
def test_bad_codes_and_bits_are_refused_with_a_clear_message(function, call, error, fragment):
    with pytest.raises(error) as info:
        call()
    assert type(info.value) is error  # TypeError for the kind of value, ValueError for a value out of range
    assert fragment in str(info.value), str(info.value)
    assert "\n" not in str(info.value)


def test_every_public_function_that_takes_codes_is_in_the_table():
    """A function added to the format or the index that takes codes gets a row above."""
    import inspect

    import bitcode_allennlp.bits.faiss_index as faiss_index
    import bitcode_allennlp.bits.hamming as hamming
    import bitcode_allennlp.bits.index as index_module
    import bitcode_allennlp.common.code_format as code_format
    import bitcode_allennlp.common.codes as codes

    tested = {row[0].split(".")[0] for row in BAD}
    for module in (code_format, codes, index_module, hamming, faiss_index):
        for name, function in vars(module).items():
            if name.startswith("_") or not inspect.isfunction(function) or function.__module__ != module.__name__:
                continue
            parameters = set(inspect.signature(function).parameters)
            if parameters & {"codes", "bits", "ints", "queries", "query", "code"} and not name.startswith("check"):
                assert name in tested or name in {"hex_to_uint64", "hex_to_int", "parse_hex_code", "precision_at_k",
                                                  "popcount"}, name


def test_lossless_conversions_are_accepted():
    expected = ["000001", "00000a"]
    for ints in ([1, 10], (1, 10), np.array([1, 10], dtype=np.int8), np.array([1, 10], dtype=np.uint16),
                 torch.tensor([1, 10], dtype=torch.int32), [np.int64(1), np.uint64(10)], [torch.tensor(1), 10]):
        assert ints_to_hex(ints, 24) == expected, ints
        assert uint64_to_hex(ints, 24) == expected
    assert ints_to_hex([[1, 2], [3]], 24) == [["000001", "000002"], ["000003"]]  # ragged rows, as before
    assert ints_to_hex(np.array([[1, 2], [3, 4]]), 24) == [["000001", "000002"], ["000003", "000004"]]
    assert ints_to_hex(5, 24) == ["000005"] and ints_to_hex([], 24) == [] and int_to_hex(np.uint64(5), 8) == "05"
    bits = [[1, 0, 1], [0, 1, 1]]
    for given in (bits, np.array(bits, dtype=np.int64), np.array(bits, dtype=bool), np.array(bits, dtype=np.uint8)):
        assert pack_bits(given).tolist() == [5, 3]
    assert unpack_bits(np.array([5, 3], dtype=np.int32), 3).tolist() == bits
    assert unpack_bits(np.array([[5], [3]]), 3).shape == (2, 1, 3)  # any shape
    assert bits_to_ints(torch.tensor(bits, dtype=torch.uint8)).tolist() == [5, 3]
    assert bits_to_ints(bits).tolist() == [5, 3]
    assert ints_to_bits([5, 3], 3).long().tolist() == bits
    assert ints_to_bits(torch.tensor([5, 3], dtype=torch.int16), 3).long().tolist() == bits
    assert torch.equal(bits_to_signs(torch.tensor([1, 0])), torch.tensor([1.0, -1.0]))
    queries, database = np.array([0, 7]), np.array([1, 2, 3, 4], dtype=np.int64)  # int64: converted
    assert np.array_equal(hamming_distances(queries, database),
                          hamming_distances(queries.astype(np.uint64), database.astype(np.uint64)))
    assert np.array_equal(small_index("flat").search([1], 1)[0], small_index().search(np.int64(1), 1)[0])
    assert pack_codes(np.array([3, 255], dtype=np.int32), 8).tolist() == [[3, 0, 0, 0], [255, 0, 0, 0]]


def test_the_right_arrays_pass_without_a_copy(tmp_path):
    """The fast paths: a uint64 array (a memory map too) or a bool array of bits is returned as it is."""
    codes = np.arange(1000, dtype=np.uint64)
    assert check_codes(codes, 24) is codes and check_codes(codes) is codes
    np.save(tmp_path / "codes.npy", codes)
    mapped = np.load(tmp_path / "codes.npy", mmap_mode="r")
    assert check_codes(mapped, 24) is mapped
    bits = np.zeros((4, 24), dtype=bool)
    assert check_bits(bits) is bits
    ones = np.ones((4, 24), dtype=np.uint8)
    assert check_bits(ones) is ones
    tensor = torch.zeros(3, 24, dtype=torch.bool)
    assert bits_to_ints(tensor).tolist() == [0, 0, 0]
    assert check_code(np.uint64(7), 3) == 7 and check_code(torch.tensor(7), 3) == 7


def test_the_first_offending_value_is_named():
    codes = np.zeros(100_000, dtype=np.int64)
    codes[[70_000, 90_000]] = [-7, 1 << 40]
    with pytest.raises(ValueError, match=re.escape("got -7 (entry 70000)")):
        check_codes(codes, 24)
    codes[70_000] = 0
    with pytest.raises(ValueError, match=re.escape("code 10000000000 (entry 90000) has bits set above its K = 24")):
        check_codes(codes, 24)
    bits = np.zeros((10, 24), dtype=np.int32)
    bits[3, 5], bits[7, 1] = 2, -1
    with pytest.raises(ValueError, match=re.escape("got 2 (entry [3, 5])")):
        check_bits(bits)
