"""`bits/probe.py`: each number against an oracle computed another way, on hand-made codes corpora."""
import itertools
import json
from fractions import Fraction

import numpy as np
import pytest
import torch

from bitcode_allennlp.bits.corpus import read_codes_corpus
from bitcode_allennlp.common.code_format import uint64_to_hex, unpack_bits
from bitcode_allennlp.bits.probe import (
    format_probe, hash_metric, knn_predictions, label_priority, mean_pair_distance, probe_codes, summary_line,
    window_features,
)
from tests.bits.conftest import write_lines
from tests.conftest import FIXTURES, pair_loop_hash_metric, run_cli

FAST = {"hidden": 32, "min_steps": 60}  # probes that are not under test: cheap


def corpus(path, words, codes, labels, num_bits, length=7):
    """Writes the flat `words`, `codes` (ints), `labels` as sentences of `length` words and reads them back."""
    hexes = uint64_to_hex(np.asarray(codes, dtype=np.uint64), num_bits)
    lines = [{"words": list(words[i : i + length]), "codes": hexes[i : i + length], "num_bits": num_bits,
              "tags": list(labels[i : i + length])} for i in range(0, len(words), length)]
    return read_codes_corpus(str(write_lines(path, lines)))


def test_codes_that_are_the_label_carry_it(tmp_path):
    # Four labels, each one code, at distance >= 4 from each other; every label has >= 100 train words.
    rng = np.random.default_rng(0)
    label_codes = {"A": 0x00, "B": 0x0F, "C": 0xF0, "D": 0xFF}

    def split(name, n):
        labels = [str(label) for label in rng.choice(list(label_codes), size=n, p=[0.4, 0.3, 0.2, 0.1])]
        words = [f"{label.lower()}{rng.integers(5)}" for label in labels]
        return corpus(tmp_path / f"{name}.jsonl", words, [label_codes[label] for label in labels], labels, 8)

    result = probe_codes(split("train", 1400), split("dev", 300))
    accuracy = result["accuracy"]
    assert accuracy["code_majority"] == accuracy["word_majority"] == 1.0
    assert accuracy["knn"] == {"1": 1.0, "10": 1.0, "100": 1.0}
    for probe in ("linear_word", "linear_window3", "mlp_word", "mlp_window3"):
        assert accuracy[probe] == 1.0, probe
    assert result["eta_squared"]["per_bit"] == pytest.approx([1.0] * 8)
    assert result["eta_squared"]["mean"] == pytest.approx(1.0)
    assert result["distance"]["same_word"] == 0.0 and result["distance"]["word_types"] == 20
    assert result["seen"] == {"word": 1.0, "code": 1.0}
    assert result["counts"]["train_codes"] == 4 and result["counts"]["codes_per_type"] == 1.0
    assert accuracy["most_frequent_label"] == pytest.approx(0.4, abs=0.07)
    assert result["hash_metric"] == {"same_label_same_code": 1.0, "diff_label_diff_code": 1.0, "codes_per_label": 1.0}


def test_codes_random_per_occurrence_carry_nothing(tmp_path):
    rng = np.random.default_rng(1)
    vocabulary = [f"w{i}" for i in range(40)]
    word_label = {word: "ABCD"[i % 4] for i, word in enumerate(vocabulary)}

    def split(name, n):
        words = [vocabulary[i] for i in rng.integers(len(vocabulary), size=n)]
        return corpus(tmp_path / f"{name}.jsonl", words, rng.integers(1 << 16, size=n), [word_label[w] for w in words],
                      16)

    train, dev = split("train", 4000), split("dev", 1000)
    result = probe_codes(train, dev, **FAST)
    accuracy = result["accuracy"]
    assert accuracy["word_majority"] == 1.0  # the words carry the label, the codes do not
    assert result["seen"]["code"] < 0.1
    assert abs(accuracy["code_majority"] - accuracy["most_frequent_label"]) < 0.05
    assert max(accuracy["knn"].values()) < 0.35 and accuracy["mlp_word"] < 0.35  # chance: about 0.25
    assert result["distance"]["same_word"] == pytest.approx(8.0, abs=0.15)  # K / 2
    assert result["distance"]["random_pair"] == pytest.approx(8.0, abs=0.1)
    assert result["eta_squared"]["mean"] < 0.01


def test_one_code_per_word_type_is_the_word_majority(tmp_path):
    # Labels noisy per occurrence, so that the majority is not trivially right; dev has words absent from train.
    rng = np.random.default_rng(2)
    vocabulary = [f"w{i}" for i in range(70)]
    word_code = dict(zip(vocabulary, rng.choice(1 << 12, size=len(vocabulary), replace=False).tolist()))

    def split(name, n, size):
        words = [vocabulary[i] for i in rng.integers(size, size=n)]
        labels = [str(rng.choice(["X", "Y", "Z"], p=[0.5, 0.3, 0.2] if int(w[1:]) % 2 else [0.1, 0.3, 0.6]))
                  for w in words]
        return corpus(tmp_path / f"{name}.jsonl", words, [word_code[w] for w in words], labels, 12)

    train, dev = split("train", 600, 60), split("dev", 400, 70)
    result = probe_codes(train, dev, **FAST)
    accuracy = result["accuracy"]
    assert accuracy["code_majority"] == accuracy["word_majority"]
    assert 0.4 < accuracy["word_majority"] < 0.9
    assert result["seen"]["code"] == result["seen"]["word"] < 0.95
    assert result["distance"]["same_word"] == 0.0
    assert result["counts"]["codes_per_type"] == 1.0
    top = result["counts"]["most_frequent_word"]
    words = [w for s in train.sentences for w in s["words"]]
    assert top["occurrences"] == max(words.count(w) for w in set(words)) == words.count(top["word"])
    assert top["distinct_codes"] == 1


def test_a_word_ending_in_nul_is_its_own_word(tmp_path):
    # "w\x00" and "w" are two words (a numpy str array would drop the NUL and merge them): in train, "w" is Y three
    # times and "w\x00" X twice; dev asks for "w\x00" twice (X). Their codes are all one code, so only the word
    # baseline can tell them apart.
    train = corpus(tmp_path / "train.jsonl", ["w", "w", "w", "w\x00", "w\x00"], [5] * 5, ["Y", "Y", "Y", "X", "X"], 4)
    dev = corpus(tmp_path / "dev.jsonl", ["w\x00", "w\x00"], [5, 5], ["X", "X"], 4)
    assert [w for s in dev.sentences for w in s["words"]] == ["w\x00", "w\x00"]  # the reader keeps the NUL
    result = probe_codes(train, dev, **FAST)
    assert result["accuracy"]["word_majority"] == 1.0  # merged with "w", it would predict Y: 0.0
    assert result["accuracy"]["code_majority"] == 0.0  # one code for all five: its majority is Y
    assert result["seen"]["word"] == 1.0
    assert result["counts"]["train_word_types"] == 2 and result["distance"]["word_types"] == 2
    assert result["counts"]["most_frequent_word"] == {"word": "w", "occurrences": 3, "distinct_codes": 1}
    dev = corpus(tmp_path / "dev_w.jsonl", ["w", "v"], [5, 5], ["Y", "Y"], 4)
    result = probe_codes(train, dev, **FAST)
    assert result["seen"]["word"] == 0.5 and result["accuracy"]["word_majority"] == 1.0  # unseen "v": Y, the most
    # frequent label


def test_majority_ties_go_to_the_more_frequent_label_then_the_name(tmp_path):
    # code 1: X Y; code 2: X Z; code 3: Y Y Y; code 4: X Z Z
    train = corpus(tmp_path / "train.jsonl", list("abcdefghij"), [1, 1, 2, 2, 3, 3, 3, 4, 4, 4],
                   ["X", "Y", "X", "Z", "Y", "Y", "Y", "X", "Z", "Z"], 4)
    # label counts: X 3, Y 4, Z 3 -> priority Y, X, Z
    assert label_priority(np.bincount(train.labels["tag"].ids)).tolist() == [1, 0, 2]
    dev = corpus(tmp_path / "dev.jsonl", list("abcdef"), [1, 2, 3, 4, 5, 3], ["Y", "X", "Y", "Z", "Y", "W"], 4)
    # code 1 -> Y (tie X/Y, Y more frequent); 2 -> X (tie X/Z, same counts, X first by name); 3 -> Y; 4 -> Z;
    # 5 unseen -> Y (the most frequent); the dev-only label W is always wrong.
    result = probe_codes(train, dev, **FAST)
    assert result["accuracy"]["code_majority"] == 5 / 6
    assert result["accuracy"]["most_frequent_label"] == 3 / 6
    assert result["seen"]["code"] == 5 / 6
    assert result["labels"] == 3
    # hash metric over the dev words and dev labels, W included: same label Y (a, c, e) -> 3 pairs, no shared code;
    # 12 pairs of different labels, one with the same code (c Y, f W: code 3); 5 codes, 4 labels
    assert result["hash_metric"] == {"same_label_same_code": 0.0, "diff_label_diff_code": 11 / 12,
                                     "codes_per_label": 5 / 4}
    assert ("hash metric (dev, tag): same label -> same code 0.00%, different labels -> different codes 91.67%, "
            "1.25 codes per label") in format_probe(result).splitlines()


def brute_force_hash_metric(codes, labels):
    """The HashMetric triple of `bits probe` (0.0 where the pair loop has no pairs or no words)."""
    same, diff, per_label = pair_loop_hash_metric(codes, labels)
    return {"same_label_same_code": same or 0.0, "diff_label_diff_code": diff or 0.0,
            "codes_per_label": per_label or 0.0}


@pytest.mark.parametrize("case", ["empty", "single_word", "one_label", "distinct_codes", "one_code", "random"])
def test_hash_metric_against_the_pair_loop(case):
    rng = np.random.default_rng(11)
    n = 40
    codes, labels = {
        "empty": ([], []),
        "single_word": ([7], [3]),
        "one_label": (rng.integers(5, size=n).tolist(), [2] * n),
        "distinct_codes": (rng.choice(1 << 10, size=n, replace=False).tolist(), rng.integers(4, size=n).tolist()),
        "one_code": ([(1 << 63) + 5] * n, rng.integers(6, size=n).tolist()),
        "random": (rng.integers(8, size=n).tolist(), rng.integers(5, size=n).tolist()),
    }[case]
    actual = hash_metric(np.array(codes, dtype=np.uint64), np.array(labels, dtype=np.int64))
    expected = brute_force_hash_metric(codes, labels)
    assert actual.keys() == expected.keys()
    for key, value in expected.items():
        assert actual[key] == pytest.approx(value, abs=1e-12), key
    if case == "single_word":
        assert actual == {"same_label_same_code": 0.0, "diff_label_diff_code": 0.0, "codes_per_label": 1.0}
    elif case == "one_label":
        assert actual["diff_label_diff_code"] == 0.0 and actual["codes_per_label"] == len(set(codes))
    elif case == "distinct_codes":
        assert actual["same_label_same_code"] == 0.0 and actual["diff_label_diff_code"] == 1.0
    elif case == "one_code":
        assert actual["same_label_same_code"] == 1.0 and actual["diff_label_diff_code"] == 0.0
    elif case == "random":
        assert 0 < actual["same_label_same_code"] < 1 and 0 < actual["diff_label_diff_code"] < 1


def brute_force_knn(train_codes, train_labels, dev_codes, k, priority):
    """For each dev code: distances to every train word, sorted; the words closer than the k-th distance count 1,
    the words at it (k - closer) / tied each (Fractions); the most votes win, ties by `priority`."""
    rank = {label: r for r, label in enumerate(priority.tolist())}
    predictions = []
    k = min(k, len(train_codes))
    for query in dev_codes.tolist():
        distances = [bin(query ^ int(code)).count("1") for code in train_codes.tolist()]
        kth = sorted(distances)[k - 1]
        closer = sum(d < kth for d in distances)
        tied = sum(d == kth for d in distances)
        votes = {}
        for d, label in zip(distances, train_labels.tolist()):
            weight = Fraction(1) if d < kth else Fraction(k - closer, tied) if d == kth else Fraction(0)
            votes[label] = votes.get(label, Fraction(0)) + weight
        predictions.append(min(votes, key=lambda label: (-votes[label], rank[label])))
    return np.array(predictions)


def test_knn_against_brute_force_with_ties():
    rng = np.random.default_rng(3)
    num_bits, num_labels = 6, 4
    train_labels = rng.choice(num_labels, size=300, p=[0.4, 0.3, 0.2, 0.1])
    # codes depend weakly on the label; 6 bits and 300 words: many equal codes and many ties at the k-th distance
    train_codes = (rng.integers(1 << num_bits, size=300) & 0b110111) | (train_labels.astype(np.int64) % 2 << 3)
    dev_codes = rng.integers(1 << num_bits, size=120).astype(np.uint64)
    priority = label_priority(np.bincount(train_labels, minlength=num_labels))
    ks = (1, 2, 5, 10, 37, 100, 299, 1000)
    predicted = knn_predictions(train_codes.astype(np.uint64), train_labels, dev_codes, num_bits, priority, ks)
    partial_ties = 0
    for k in ks:
        assert predicted[k].tolist() == brute_force_knn(train_codes, train_labels, dev_codes, k,
                                                        priority).tolist(), k
    # the oracle is exercised where it matters: fractional tied words, and exact vote ties broken by priority
    for query in dev_codes.tolist()[:20]:
        distances = np.array([bin(query ^ int(c)).count("1") for c in train_codes.tolist()])
        kth = np.sort(distances)[9]
        partial_ties += int((distances <= kth).sum() > 10)
    assert partial_ties > 10
    assert predicted[1000].tolist() == [priority[0]] * len(dev_codes)  # k > train words: every word votes


def test_mean_pair_distance_against_pairs():
    rng = np.random.default_rng(4)
    bits = rng.integers(2, size=(40, 5)).astype(np.uint8)
    groups = np.concatenate([[5], rng.integers(4, size=39)])  # group 4 empty, group 5 one entry
    means, sizes = mean_pair_distance(bits, groups)
    for group in range(6):
        members = np.flatnonzero(groups == group)
        assert sizes[group] == len(members)
        pair_distances = [int((bits[a] != bits[b]).sum()) for a, b in itertools.combinations(members, 2)]
        if pair_distances:
            assert means[group] == pytest.approx(np.mean(pair_distances))
        else:
            assert np.isnan(means[group])


def test_same_word_and_random_pair_distances(tmp_path):
    rng = np.random.default_rng(5)
    words = [f"w{i}" for i in rng.integers(8, size=50)]
    codes = rng.integers(1 << 10, size=50)
    result = probe_codes(corpus(tmp_path / "train.jsonl", words, codes, ["X", "Y"] * 25, 10),
                         corpus(tmp_path / "dev.jsonl", words[:7], codes[:7], ["X"] * 7, 10), **FAST)

    def mean_distance(indices):
        return np.mean([bin(int(codes[a]) ^ int(codes[b])).count("1") for a, b in itertools.combinations(indices, 2)])

    per_word = [mean_distance([i for i, w in enumerate(words) if w == word]) for word in sorted(set(words))
                if words.count(word) >= 2]
    assert result["distance"]["same_word"] == pytest.approx(np.mean(per_word))
    assert result["distance"]["word_types"] == len(per_word)
    assert result["distance"]["random_pair"] == pytest.approx(mean_distance(range(50)))


def test_eta_squared_against_numpy(tmp_path):
    rng = np.random.default_rng(6)
    labels = rng.choice(["A", "B", "C"], size=210).tolist()
    bias = {"A": 0.2, "B": 0.5, "C": 0.9}
    bits = np.array([[rng.random() < (bias[label] if i < 3 else 0.5) for i in range(6)] for label in labels])
    bits[:, 5] = 1  # a constant bit
    codes = (bits.astype(np.int64) << np.arange(5, -1, -1)).sum(axis=1)
    result = probe_codes(corpus(tmp_path / "train.jsonl", ["w"] * 210, codes, labels, 6),
                         corpus(tmp_path / "dev.jsonl", ["w"] * 7, codes[:7], labels[:7], 6), **FAST)
    expected = []
    y = np.array(labels)
    for i in range(6):
        b = bits[:, i] * 2.0 - 1.0
        total = ((b - b.mean()) ** 2).sum()
        within = sum(((b[y == label] - b[y == label].mean()) ** 2).sum() for label in "ABC")
        expected.append(None if total == 0 else 1 - within / total)
    per_bit = result["eta_squared"]["per_bit"]
    assert per_bit[5] is None and expected[5] is None
    assert per_bit[:5] == pytest.approx(expected[:5])
    assert result["eta_squared"]["mean"] == pytest.approx(np.mean(expected[:5]))
    assert min(per_bit[:3]) > 0.2 and max(per_bit[3:5]) < 0.05


def test_window_features_stop_at_sentence_edges(tmp_path):
    train = corpus(tmp_path / "train.jsonl", list("abcde"), [1, 2, 3, 4, 5], list("XXXXX"), 3, length=3)
    signs = 2.0 * unpack_bits(train.codes, 3).astype(np.float32) - 1.0
    features = window_features(signs, train)
    assert features.shape == (5, 9)
    # sentences: a b c | d e
    assert features[0, :3].tolist() == [0, 0, 0] and features[0, 6:].tolist() == signs[1].tolist()
    assert features[2, :3].tolist() == signs[1].tolist() and features[2, 6:].tolist() == [0, 0, 0]
    assert features[3, :3].tolist() == [0, 0, 0] and features[3, 3:6].tolist() == signs[3].tolist()
    assert features[4, :3].tolist() == signs[3].tolist() and features[4, 6:].tolist() == [0, 0, 0]


def test_probes_are_deterministic_and_leave_torch_alone(tmp_path):
    rng = np.random.default_rng(7)
    labels = rng.choice(["A", "B", "C"], size=300).tolist()
    codes = rng.integers(1 << 8, size=300)
    train = corpus(tmp_path / "train.jsonl", ["w"] * 300, codes, labels, 8)
    dev = corpus(tmp_path / "dev.jsonl", ["w"] * 50, codes[:50], labels[:50], 8)
    threads = torch.get_num_threads()
    torch.manual_seed(123)
    expected_draw = torch.rand(3)
    torch.manual_seed(123)
    first = probe_codes(train, dev, seed=3, **FAST)
    assert torch.equal(torch.rand(3), expected_draw) and torch.get_num_threads() == threads
    assert probe_codes(train, dev, seed=3, **FAST) == first
    assert first["probe_training"]["steps"]["mlp_word"] == 60  # one batch per pass, min_steps passes


def test_errors(tmp_path):
    train = corpus(tmp_path / "train.jsonl", list("ab"), [1, 2], ["O", "B-PER"], 4)
    with pytest.raises(ValueError, match="4-bit codes, dev 8-bit"):
        probe_codes(train, corpus(tmp_path / "dev8.jsonl", list("ab"), [1, 2], ["O", "O"], 8))
    with pytest.raises(ValueError, match="'type' is not in the dev corpus"):
        probe_codes(train, corpus(tmp_path / "dev.jsonl", list("ab"), [1, 2], ["NN", "DT"], 4), view="type")


def test_cli_matches_the_api(tmp_path):
    train, dev = FIXTURES / "data" / "codes" / "ner.train.jsonl", FIXTURES / "data" / "codes" / "ner.dev.jsonl"
    out = tmp_path / "probe.json"
    result = run_cli(["bits", "probe", "--train", train, "--dev", dev, "--label-view", "type", "--seed", "2",
                      "--max-sentences", "30", "--json", out])
    expected = probe_codes(read_codes_corpus(str(train), max_sentences=30),
                           read_codes_corpus(str(dev), max_sentences=30), view="type", seed=2)
    written = json.loads(out.read_text())
    assert written == json.loads(json.dumps(expected))
    assert format_probe(expected) in result.stdout
    assert "word majority (reference)" in result.stdout and "100-NN Hamming vote" in result.stdout
    assert summary_line(expected).startswith("codes on dev (type): code majority")
