"""Statistics of a codes corpus: what the bits are, and how much of each label they keep (`allennlp bits stats`).

Everything is an exact plug-in count over the N words of the corpus (codes are discrete; no estimation). Logs are
base 2 (bits); 0 log 0 = 0. With p_i the share of words whose bit i is 1:

* per bit: `p_one` = p_i, `balance` = min(p_i, 1 - p_i) / 0.5, `entropy` = H(p_i) (1.0 for a fair bit, 0.0 for a
  constant one); `correlation` = Pearson (phi) correlation of bits i and j over the words, `None` where a bit is
  constant;
* codes: `distinct_codes`, `code_entropy` H(code), `single_word_codes` (codes that only one word has);
* per label view (`tag`, and for BIO-style NER tags `prefix` and `type`, see `corpus.label_views`), with n(c, l) the
  words with code c and label l, n_c, n_l the margins:
  - `mutual_information` I(code; label) = sum_(c,l) n(c,l)/N log2(N n(c,l) / (n_c n_l)), and
    `normalized_mutual_information` = I / H(label) (1.0: the code determines the label);
  - `bit_mutual_information[i]` = I(bit_i; label), the same formula over the 2 x L table of bit i;
  - `p_one_given_label[l][i]` = P(bit i = 1 | label l), the numbers of the paper's Figure 4 (`allennlp bits heatmap`);
  - `bit_ranking`: the bits by I(bit_i; label), most first; `bit_meaning[i]`: the labels bit i is 1 on and 0 on,
    each with its share of words and its part of I(bit_i; label) (`bits.explain`);
  - `floor_bits` = ceil(log2 L), the fewest bits that can tell L labels apart (paper §6);
  - `majority_accuracy` = sum_c max_l n(c, l) / N, the accuracy of labelling each code with its most frequent label;
  - over the C(N, 2) unordered pairs of distinct words: `same_label_same_code` = pairs with the same label and the
    same code / pairs with the same label, `diff_label_diff_code` = pairs with different labels and different codes
    / pairs with different labels (the definitions of the training metric `code_metrics`). Counted exactly:
    same label = sum_l C(n_l, 2), same code = sum_c C(n_c, 2), both = sum_(c,l) C(n(c,l), 2), and different label
    and different code = C(N, 2) - same label - same code + both; no pair is enumerated.

I(code; label) is exact for the corpus, not an estimate of a population value: when most codes occur once
(`distinct_code_ratio` near 1, as with K = 24 and real text), H(label | code) is near 0 whatever the codes mean, so
I(code; label) approaches H(label) for any injective coding. Read it beside `distinct_code_ratio`; to compare
models use the per-bit I(bit_i; label) (2 x L tables, many words per cell) or `allennlp bits precision`.

`format_statistics` prints three tables, each followed by what its columns mean and a takeaway computed from them
(near-constant bits: balance < `NEAR_CONSTANT`; near-copies: |correlation| >= `NEAR_COPY`; the bits ranked by
I(bit_i; label) per view; beside majority accuracy, the share of the most frequent label; a caution when at least 10%
of the words have a code of their own), then `explain.format_explanation`: what each bit says about one label view.
"""
import math
import textwrap
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from bitcode_allennlp.bits.corpus import PREFIX_ORDER, CodesCorpus, LabelColumn, OUTSIDE
from bitcode_allennlp.bits.explain import WIDTH, bit_meanings, bit_ranking, format_explanation
from bitcode_allennlp.common.counts import counted


NEAR_CONSTANT = 0.1
"""A bit with balance below this (p(1) under 5% or over 95%) is called near-constant in the takeaway."""
NEAR_COPY = 0.9
"""Two bits with |correlation| at least this are called near-copies in the takeaway."""


def entropy_bits(counts: np.ndarray) -> float:
    """Plug-in entropy in bits of a distribution given by non-negative counts (any shape)."""
    counts = np.asarray(counts, dtype=np.float64).reshape(-1)  # (m,)
    total = counts.sum()
    if total <= 0:
        return 0.0
    p = counts[counts > 0] / total  # (m',)
    return float(-(p * np.log2(p)).sum())


def binary_entropy(p: np.ndarray) -> np.ndarray:
    """H(p) in bits, elementwise, with 0 log 0 = 0."""
    p = np.asarray(p, dtype=np.float64)
    q = 1.0 - p
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -(np.where(p > 0, p * np.log2(p), 0.0) + np.where(q > 0, q * np.log2(q), 0.0))
    return h


def pairs(counts: np.ndarray) -> int:
    """sum C(n, 2) over the counts, exactly (Python ints)."""
    counts = np.asarray(counts, dtype=np.int64)
    return int((counts * (counts - 1) // 2).sum())


def floor_bits(num_labels: int) -> int:
    """ceil(log2 L): the fewest bits with at least L distinct codes (0 for L <= 1)."""
    return (num_labels - 1).bit_length() if num_labels > 1 else 0


def label_order(view: str, names: List[str], counts: np.ndarray) -> List[int]:
    """Display order of a view's labels: BIOES prefixes in `PREFIX_ORDER`; otherwise by count (most frequent
    first, then by name), with `O` last for the entity types."""
    if view == "prefix":
        rank = {prefix: i for i, prefix in enumerate(PREFIX_ORDER)}
        return sorted(range(len(names)), key=lambda i: (rank.get(names[i], len(rank)), names[i]))
    return sorted(range(len(names)), key=lambda i: (view == "type" and names[i] == OUTSIDE, -int(counts[i]), names[i]))


def bit_correlation(bits: np.ndarray) -> np.ndarray:
    """
    Pearson (phi) correlation of every pair of bits over the words.

    # Parameters

    bits : `np.ndarray`
        `(n, K)` 0/1 bits.

    # Returns

    `np.ndarray` `(K, K)` float64, NaN in the rows and columns of constant bits.
    """
    n = bits.shape[0]
    f = bits.astype(np.float64)  # (n, K)
    p = f.mean(0)  # (K,)
    covariance = f.T @ f / n - np.outer(p, p)  # (K, K)
    std = np.sqrt(p * (1 - p))  # (K,)
    scale = np.outer(std, std)  # (K, K)
    with np.errstate(divide="ignore", invalid="ignore"):
        correlation = np.where(scale > 0, covariance / scale, np.nan)  # (K, K)
    np.fill_diagonal(correlation, np.where(std > 0, 1.0, np.nan))
    return correlation


def mutual_information_of_table(joint: np.ndarray) -> float:
    """I(X; Y) in bits of a joint count table `(|X|, |Y|)`: sum n_xy/N log2(N n_xy / (n_x n_y))."""
    joint = np.asarray(joint, dtype=np.float64)  # (X, Y)
    total = joint.sum()
    if total <= 0:
        return 0.0
    rows = joint.sum(1, keepdims=True)  # (X, 1)
    cols = joint.sum(0, keepdims=True)  # (1, Y)
    nonzero = joint > 0  # (X, Y)
    ratio = np.where(nonzero, joint * total, 1.0) / np.where(nonzero, rows * cols, 1.0)  # (X, Y)
    return float((np.where(nonzero, joint, 0.0) * np.log2(ratio)).sum() / total)


def bit_label_information(bits: np.ndarray, labels: np.ndarray, label_counts: np.ndarray,
                          num_labels: int) -> Tuple[List[float], np.ndarray]:
    """
    Per bit, I(bit_i; label) in bits from the (2, L) table of the bit, and the words of each label whose bit i is 1:
    `bits` (n, K) 0/1, `labels` (n,) ids, `label_counts` (L,) words per label.

    # Returns

    `(bit_mi, ones_by_label)`: K floats and `(L, K)` int64.
    """
    num_bits = bits.shape[1]
    hot = bits.astype(bool)  # (n, K)
    flat = (labels[:, None] * num_bits + np.arange(num_bits))[hot]  # (ones,)
    ones_by_label = np.bincount(flat, minlength=num_labels * num_bits).reshape(num_labels, num_bits)  # (L, K)
    tables = np.stack([label_counts[:, None] - ones_by_label, ones_by_label], axis=0)  # (2, L, K)
    bit_mi = [mutual_information_of_table(tables[:, :, i]) for i in range(num_bits)]
    return bit_mi, ones_by_label


def label_statistics(view: str, column: LabelColumn, code_ids: np.ndarray, code_counts: np.ndarray,
                     bits: np.ndarray) -> Dict[str, Any]:
    """
    The statistics of one label view (see the module docstring).

    # Parameters

    column : `LabelColumn`
        `ids` (n,) and `names` (L,).
    code_ids : `np.ndarray`
        `(n,)` dense id of each word's code (`np.unique(codes, return_inverse=True)`).
    code_counts : `np.ndarray`
        `(C,)` words per distinct code.
    bits : `np.ndarray`
        `(n, K)` 0/1 bits.
    """
    n = bits.shape[0]
    num_labels = len(column.names)
    labels = column.ids.astype(np.int64)  # (n,)
    label_counts = np.bincount(labels, minlength=num_labels)  # (L,)
    # Joint (code, label) cells that occur, with their counts.
    cells, cell_counts = np.unique(code_ids.astype(np.int64) * num_labels + labels, return_counts=True)  # (J,), (J,)
    cell_codes, cell_labels = cells // num_labels, cells % num_labels  # (J,), (J,)
    n_c = code_counts[cell_codes].astype(np.float64)  # (J,)
    n_l = label_counts[cell_labels].astype(np.float64)  # (J,)
    mutual_information = float((cell_counts * np.log2(cell_counts * float(n) / (n_c * n_l))).sum() / n)
    label_entropy = entropy_bits(label_counts)
    bit_mi, ones_by_label = bit_label_information(bits, labels, label_counts, num_labels)  # (K,), (L, K)
    p_one = ones_by_label / np.maximum(label_counts, 1)[:, None]  # (L, K)
    majority = np.zeros(code_counts.shape[0], dtype=np.int64)  # (C,)
    np.maximum.at(majority, cell_codes, cell_counts)
    # Exact pair counts.
    total_pairs = n * (n - 1) // 2
    same_label, same_code, both = pairs(label_counts), pairs(code_counts), pairs(cell_counts)
    diff_label = total_pairs - same_label
    labels_per_code = np.bincount(cell_codes, minlength=code_counts.shape[0])  # (C,)
    order = label_order(view, column.names, label_counts)
    return {
        "labels": [column.names[i] for i in order],
        "counts": [int(label_counts[i]) for i in order],
        "num_labels": num_labels,
        "floor_bits": floor_bits(num_labels),
        "label_entropy": label_entropy,
        "mutual_information": max(mutual_information, 0.0),
        "normalized_mutual_information": mutual_information / label_entropy if label_entropy > 0 else 0.0,
        "conditional_entropy": max(label_entropy - mutual_information, 0.0),
        "bit_mutual_information": bit_mi,
        "majority_accuracy": float(majority.sum() / n),
        "codes_per_label": float(np.bincount(cell_labels, minlength=num_labels).mean()),
        "labels_per_code": float(labels_per_code.mean()),
        "single_label_codes": float((labels_per_code == 1).mean()),
        "same_label_pairs": same_label,
        "diff_label_pairs": diff_label,
        "same_label_same_code": both / same_label if same_label else 0.0,
        "diff_label_diff_code": (total_pairs - same_label - same_code + both) / diff_label if diff_label else 0.0,
        "p_one_given_label": {column.names[i]: [float(v) for v in p_one[i]] for i in order},
        "bit_ranking": bit_ranking(bit_mi),
        "bit_meaning": bit_meanings(ones_by_label, label_counts, column.names, order),
    }


def code_statistics(corpus: CodesCorpus) -> Dict[str, Any]:
    """All statistics of a codes corpus as a JSON-able dict (keys in the module docstring)."""
    codes, num_bits = corpus.codes, corpus.num_bits
    n = len(corpus)
    bits = corpus.code_value.bits_as(np.uint8)  # (n, K)
    _, code_ids, code_counts = np.unique(codes, return_inverse=True, return_counts=True)  # (C,), (n,), (C,)
    code_ids = code_ids.reshape(-1)  # (n,)
    p = bits.mean(0, dtype=np.float64)  # (K,)
    entropy = binary_entropy(p)  # (K,)
    balance = np.minimum(p, 1 - p) / 0.5  # (K,)
    correlation = bit_correlation(bits)  # (K, K)
    off_diagonal = np.abs(correlation[~np.eye(num_bits, dtype=bool)])  # (K * (K - 1),)
    defined = off_diagonal[~np.isnan(off_diagonal)]
    if defined.size:
        masked = np.where(np.isnan(correlation) | np.eye(num_bits, dtype=bool), -1.0, np.abs(correlation))
        worst = np.unravel_index(int(np.argmax(masked)), masked.shape)
    stats: Dict[str, Any] = {
        "corpus": corpus.path,
        "num_bits": num_bits,
        "sentences": len(corpus.sentences),
        "words": n,
        "distinct_codes": int(code_counts.shape[0]),
        "distinct_code_ratio": float(code_counts.shape[0] / n),
        "code_entropy": entropy_bits(code_counts),
        "single_word_codes": int((code_counts == 1).sum()),
        "bits": {
            "p_one": p.tolist(),
            "balance": balance.tolist(),
            "entropy": entropy.tolist(),
            "mean_balance": float(balance.mean()),
            "mean_entropy": float(entropy.mean()),
        },
        "correlation": {
            "matrix": [[None if math.isnan(v) else float(v) for v in row] for row in correlation],
            "mean_abs": float(defined.mean()) if defined.size else None,
            "max_abs": float(defined.max()) if defined.size else None,
            "max_abs_pair": [int(worst[0]), int(worst[1])] if defined.size else None,
        },
        "labels": {view: label_statistics(view, column, code_ids, code_counts, bits)
                   for view, column in corpus.labels.items()},
    }
    return stats


def _fmt(value: Optional[float], digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _prose(text: str) -> List[str]:
    return textwrap.wrap(text, WIDTH)


def _bit_list(bits: List[int]) -> str:
    return ", ".join(map(str, bits)) if bits else "none"


def format_statistics(stats: Dict[str, Any], view: Optional[str] = None,
                      bits: Optional[Sequence[int]] = None) -> str:
    """The statistics as markdown tables (summary, one row per label view, one row per bit), each followed by what
    its columns mean and a takeaway; then what each bit says about one label view (`explain.format_explanation`,
    `view` and `bits` there)."""
    sections = [_summary_section(stats), _label_section(stats), _bit_section(stats),
                format_explanation(stats, view, bits)]
    return "\n\n".join(section for section in sections if section)


def _summary_section(stats: Dict[str, Any]) -> str:
    bits, correlation, num_bits = stats["bits"], stats["correlation"], stats["num_bits"]
    lines = [
        f"{stats['corpus']}: {counted(stats['words'], 'word')} in {counted(stats['sentences'], 'sentence')}, "
        f"K = {num_bits} bits",
        "",
        "| distinct codes | distinct / words | H(code) | mean bit entropy | mean bit balance | mean abs corr "
        "| max abs corr |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        f"| {stats['distinct_codes']:,} | {stats['distinct_code_ratio']:.3f} | {stats['code_entropy']:.2f} | "
        f"{bits['mean_entropy']:.3f} | {bits['mean_balance']:.3f} | {_fmt(correlation['mean_abs'])} | "
        f"{_fmt(correlation['max_abs'])}"
        + (f" (bits {correlation['max_abs_pair'][0]}, {correlation['max_abs_pair'][1]})"
           if correlation["max_abs_pair"] else "") + " |",
        "",
    ]
    most = min(float(num_bits), math.log2(max(stats["words"], 1)))
    lines += _prose(f"distinct / words: 1.000 when every word has a code of its own; H(code): bits of information "
                    f"per code, at most min(K, log2 words) = {most:.2f}; bit entropy H(bit): 1.0 for a bit set in "
                    "half the words, 0.0 for a constant one; balance: min(p(1), 1 - p(1)) / 0.5, 1.0 for half the "
                    "words; abs corr: |Pearson correlation| of two bits over the words, 1.0 when one copies (or "
                    "inverts) the other.")
    words_per_code = stats["words"] / max(stats["distinct_codes"], 1)
    lines += _prose(f"takeaway: the codes carry {stats['code_entropy']:.2f} of the {most:.2f} bits possible here "
                    f"({100 * stats['code_entropy'] / most if most else 0:.0f}%): {stats['distinct_codes']:,} codes "
                    f"for {stats['words']:,} words, {words_per_code:.1f} words per code.")
    return "\n".join(lines)


def _label_section(stats: Dict[str, Any]) -> str:
    views = stats["labels"]
    if not views:
        return ""
    lines = [
        "| labels | L | floor ceil(log2 L) | H(label) | I(code; label) | I / H(label) | H(label given code) | "
        "majority acc. | codes per label | labels per code | same label: same code | diff. label: diff. code |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for view, s in views.items():
        lines.append(
            f"| {view} | {s['num_labels']} | {s['floor_bits']} | {s['label_entropy']:.3f} | "
            f"{s['mutual_information']:.3f} | {s['normalized_mutual_information']:.3f} | "
            f"{s['conditional_entropy']:.3f} | {s['majority_accuracy']:.3f} | {s['codes_per_label']:.1f} | "
            f"{s['labels_per_code']:.2f} | {s['same_label_same_code']:.4f} | {s['diff_label_diff_code']:.4f} |")
    lines.append("")
    lines += _prose("H(label): bits to name a word's label; I(code; label): the bits of it the code gives, H(label "
                    "given code) what is left, I / H(label) the share given (1.0: the code determines the label); "
                    "floor: the fewest bits that tell L labels apart; majority acc.: share of words right when each "
                    "code gets its most frequent label, on this same corpus (not a dev score: allennlp bits probe); "
                    "same label: same code: share of same-label word pairs with one code; diff. label: diff. code: "
                    "share of different-label word pairs with different codes.")
    for view, s in views.items():
        top = max(range(len(s["counts"])), key=lambda i: s["counts"][i])
        lines += _prose(f"takeaway, {view}: the code gives {100 * s['normalized_mutual_information']:.1f}% of "
                        f"H({view}); majority acc. {100 * s['majority_accuracy']:.1f}%, vs "
                        f"{100 * s['counts'][top] / stats['words']:.1f}% labelling every word {s['labels'][top]}.")
    if stats["single_word_codes"] >= 0.1 * stats["words"]:
        lines += _prose(f"caution: {100 * stats['single_word_codes'] / stats['words']:.1f}% of the words have a code "
                        "no other word has; majority acc. counts each as right and H(label given code) as 0 whatever "
                        "the code means: compare I(bit; label) below, or allennlp bits probe on dev.")
    return "\n".join(lines)


def _bit_section(stats: Dict[str, Any]) -> str:
    bits, views, num_bits = stats["bits"], stats["labels"], stats["num_bits"]
    matrix = stats["correlation"]["matrix"]
    lines = ["| bit | p(1) | balance | H(bit) | max abs corr (with bit) |"
             + "".join(f" I(bit; {view}) |" for view in views), "|---:" * (5 + len(views)) + "|"]
    copies = []
    for i in range(num_bits):
        others = [(abs(v), j) for j, v in enumerate(matrix[i]) if j != i and v is not None]
        worst = f"{max(others)[0]:.3f} ({max(others)[1]})" if others else "-"
        copies += [f"{i} and {j} ({value:.2f})" for value, j in others if j > i and value >= NEAR_COPY]
        lines.append(f"| {i} | {bits['p_one'][i]:.3f} | {bits['balance'][i]:.3f} | {bits['entropy'][i]:.3f} | "
                     f"{worst} |" + "".join(f" {s['bit_mutual_information'][i]:.4f} |" for s in views.values()))
    lines.append("")
    lines += _prose("p(1): share of words with the bit 1; max abs corr: the bit's largest |correlation| with another "
                    "bit (that bit in brackets); I(bit; view): bits of information this one bit gives about the "
                    "label, at most min(1, H(label)).")
    constant = [i for i in range(num_bits) if bits["balance"][i] < NEAR_CONSTANT]
    lines += _prose(f"takeaway: near-constant bits (balance < {NEAR_CONSTANT}, p(1) under 5% or over 95%): "
                    f"{_bit_list(constant)}; near-copies (abs corr >= {NEAR_COPY}): {'; '.join(copies) or 'none'}.")
    lines += [f"bits by I(bit; {view}), most first: {', '.join(map(str, s['bit_ranking']))}"
              for view, s in views.items()]
    return "\n".join(lines)
