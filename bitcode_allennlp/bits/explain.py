"""What each bit says about a label (the last section of `allennlp bits stats`): bits ranked by I(bit; label), and for
each bit the labels it is 1 on and 0 on.

With N words, n_l the words of label l, m_i the words whose bit i is 1 and m_li those of label l, p_i = m_i / N and
q_li = m_li / n_l (P(bit i = 1 | l)):

* label l is **on the 1 side** of bit i when q_li > p_i (its words set the bit more often than all words do; then
  P(l | bit i = 1) > P(l)), **on the 0 side** when q_li < p_i; compared exactly, as m_li N vs m_i n_l;
* its **share** is q_li on the 1 side and 1 - q_li on the 0 side: the part of the label's words with the bit 1 (0);
* its **information** is its part of I(bit_i; label): (n_l / N) KL(q_li || p_i), the Kullback-Leibler divergence of
  the two Bernoulli distributions in bits (0 log 0 = 0). Over the labels these sum to I(bit_i; label) exactly (the
  identity I(X; Y) = sum_y P(y) KL(P(X | y) || P(X))), so they say which labels make a bit informative. Each side
  lists its labels by information, most first, then in the view's label order;
* `bit_ranking`: the bits by I(bit_i; label), most first, ties (to 12 decimals) by the lower bit;
* bit i **marks** label l exactly when it is 1 on every word of l and 0 on every other word (or the reverse).

Standard library and numpy only (the light `allennlp bits` process).
"""
import textwrap
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

SHOWN = 3
"""Labels shown per side of a bit in the table (the JSON keeps them all)."""
WIDTH = 118
"""Width of the prose lines under the tables."""


def label_information(ones_by_label: np.ndarray, label_counts: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """
    Side and information of every (label, bit) (module docstring): `ones_by_label` `(L, K)` m_li, `label_counts`
    `(L,)` n_l.

    # Returns

    `(side, information)`: `(L, K)` int, +1 on the 1 side, -1 on the 0 side, 0 neither; `(L, K)` float64 bits.
    """
    ones_by_label = np.asarray(ones_by_label, dtype=np.int64)  # (L, K)
    counts = np.asarray(label_counts, dtype=np.int64)  # (L,)
    n = int(counts.sum())
    ones = ones_by_label.sum(0)  # (K,)
    side = np.sign(ones_by_label * n - ones[None, :] * counts[:, None])  # (L, K)
    q = ones_by_label / np.maximum(counts, 1)[:, None]  # (L, K)
    p = np.broadcast_to(ones / max(n, 1), q.shape)  # (L, K)
    with np.errstate(divide="ignore", invalid="ignore"):
        one = np.where(q > 0, q * np.log2(q / p), 0.0)  # (L, K)
        zero = np.where(q < 1, (1 - q) * np.log2((1 - q) / (1 - p)), 0.0)  # (L, K)
    information = np.where(side != 0, counts[:, None] / max(n, 1) * (one + zero), 0.0)  # (L, K)
    return side, information


def bit_meanings(ones_by_label: np.ndarray, label_counts: np.ndarray, names: Sequence[str],
                 order: Sequence[int]) -> List[Dict[str, List[Dict[str, Any]]]]:
    """Per bit, `{"one": [...], "zero": [...]}`: the labels on each side as `{"label", "share", "information"}`, by
    information, most first, then in `order` (the view's label order)."""
    side, information = label_information(ones_by_label, label_counts)  # (L, K), (L, K)
    q = np.asarray(ones_by_label) / np.maximum(np.asarray(label_counts), 1)[:, None]  # (L, K)
    rank = {label: position for position, label in enumerate(order)}
    meanings = []
    for i in range(side.shape[1]):
        meaning: Dict[str, List[Dict[str, Any]]] = {}
        for key, sign in (("one", 1), ("zero", -1)):
            labels = sorted(np.flatnonzero(side[:, i] == sign), key=lambda j: (-information[j, i], rank[j]))
            meaning[key] = [{"label": names[j], "share": float(q[j, i] if sign > 0 else 1 - q[j, i]),
                             "information": float(information[j, i])} for j in labels]
        meanings.append(meaning)
    return meanings


def bit_ranking(bit_information: Sequence[float]) -> List[int]:
    """Bits by I(bit; label), most first, ties (equal to 12 decimals: float rounding apart) by the lower bit."""
    return sorted(range(len(bit_information)), key=lambda i: (-round(bit_information[i], 12), i))


def marked_label(meaning: Dict[str, List[Dict[str, Any]]], num_labels: int) -> Optional[Tuple[str, int]]:
    """`(label, value)` when the bit is `value` on every word of the label and not on any other word of the
    `num_labels` labels that have words, else `None`."""
    for key, value, other in (("one", 1, "zero"), ("zero", 0, "one")):
        entries = meaning[key] + meaning[other]
        if len(meaning[key]) == 1 and len(entries) == num_labels and all(entry["share"] == 1.0 for entry in entries):
            return meaning[key][0]["label"], value
    return None


def default_view(views: Sequence[str]) -> str:
    """The view explained when none is asked for: `type` for BIO-style NER tags, else `tag`."""
    return "type" if "type" in views else "tag"


def check_request(stats: Dict[str, Any], view: Optional[str], bits: Optional[Sequence[int]]) -> None:
    """A `ValueError` naming what is wrong with the asked view or bits."""
    views = list(stats["labels"])
    if view is not None and view not in views:
        raise ValueError(f"--label-view {view}: {stats['corpus']} has " + (
            f"the label views {', '.join(views)}" if views else "no labels (no tags or trees)"))
    if bits is not None and not views:
        raise ValueError(f"--bits: {stats['corpus']} has no labels (no tags or trees) to explain the bits by")
    wrong = [bit for bit in bits or () if not 0 <= bit < stats["num_bits"]]
    if wrong:
        raise ValueError(f"--bits: {', '.join(map(str, wrong))} not a bit of K = {stats['num_bits']} "
                         f"(0..{stats['num_bits'] - 1})")


def _percent(share: float) -> str:
    """A share as a whole percent, never rounded to 0% or 100% unless it is exactly that."""
    text = f"{100 * share:.0f}%"
    return ">99%" if text == "100%" and share < 1 else "<1%" if text == "0%" and share > 0 else text


def _side(entries: List[Dict[str, Any]]) -> str:
    shown = ", ".join(f"{entry['label']} {_percent(entry['share'])}" for entry in entries[:SHOWN])
    return (shown + (f", +{len(entries) - SHOWN}" if len(entries) > SHOWN else "")) or "-"


def format_explanation(stats: Dict[str, Any], view: Optional[str] = None,
                       bits: Optional[Sequence[int]] = None) -> str:
    """The ranked table of one label view (default `default_view`) for every bit, or for `bits`; then what its
    columns mean and a takeaway. "" for a corpus without labels."""
    if not stats["labels"]:
        return ""
    view = view or default_view(list(stats["labels"]))
    s = stats["labels"][view]
    chosen = set(range(stats["num_bits"]) if bits is None else bits)
    lines = [f"What each bit says about {view}, bits by I(bit; {view}), most first:", "",
             f"| rank | bit | I(bit; {view}) | I / H({view}) | p(1) | 1 on: label, its words with bit 1 "
             "| 0 on: label, its words with bit 0 |", "|---:|---:|---:|---:|---:|---|---|"]
    for rank, i in enumerate(s["bit_ranking"], 1):
        if i in chosen:
            share = s["bit_mutual_information"][i] / s["label_entropy"] if s["label_entropy"] > 0 else 0.0
            lines.append(f"| {rank} | {i} | {s['bit_mutual_information'][i]:.4f} | {share:.3f} | "
                         f"{stats['bits']['p_one'][i]:.3f} | {_side(s['bit_meaning'][i]['one'])} | "
                         f"{_side(s['bit_meaning'][i]['zero'])} |")
    lines += [""] + textwrap.wrap(
        f"1 on: the labels whose words set the bit more often than all words do (p(1)), with the share of the "
        f"label's words that set it; 0 on: less often, with the share that leave it 0. Each side by the label's "
        f"part of I(bit; {view}), most first, at most {SHOWN} (+n: more labels); all in --json.", WIDTH)
    asked = "" if bits is None else "of the bits asked, "
    lines += textwrap.wrap(f"takeaway: {asked}" + _takeaway(stats, view, sorted(chosen)), WIDTH)
    return "\n".join(lines)


def _takeaway(stats: Dict[str, Any], view: str, bits: List[int]) -> str:
    s = stats["labels"][view]
    top = [i for i in s["bit_ranking"] if i in bits]
    best = top[0]
    meaning = s["bit_meaning"][best]
    parts = [f"bit {best} tells the most about {view} ({s['bit_mutual_information'][best]:.3f} of "
             f"H({view}) = {s['label_entropy']:.3f} bits): 1 on {_side(meaning['one'][:1])}, 0 on "
             f"{_side(meaning['zero'][:1])}"]
    present = sum(1 for count in s["counts"] if count > 0)
    marks = [(i, marked_label(s["bit_meaning"][i], present)) for i in top]
    marks = [f"bit {i} is {value} exactly on {label}" for i, found in marks if found for label, value in [found]]
    parts.append("; ".join(marks) if marks else f"no bit marks one {view} exactly")
    weak = [i for i in top if s["bit_mutual_information"][i] < 0.01 * s["label_entropy"]]
    if weak:
        parts.append(f"bits carrying under 1% of H({view}): {', '.join(map(str, weak))}")
    return "; ".join(parts) + "."
