"""The scoring of precision@k (`allennlp bits precision`): neighbour label counts, per-view precision, the table.

Where this sits: arrays only, below `index`, whose `precision_at_k` checks the arguments, searches the index
(`HammingIndex.candidate_sets`) and scores the neighbours here.

**precision@k** (the retrieval protocol of DHIM, "Refining BERT Embeddings for Document Hashing via Mutual
Information Maximization", after Chaidaroon and Fang 2017: for each query, the share of its top-100 Hamming
neighbours that share its label, averaged over the queries), adapted to words: queries are the words of one codes
corpus (dev), the database the words of another (train), the label one view (entity `type`, POS `tag`, ...).
`ties="index"` scores exactly the list `search` returns; `ties="average"` scores the expectation over a uniformly
random order of the entries tied at the k-th distance (entries closer than that count fully, the m tied slots are
shared by the tied entries in proportion), which does not depend on the corpus order (exact index types only).
Queries with the same code have the same neighbours, so each distinct query code is searched once.
"""
import textwrap
from typing import Any, Dict, Iterable, List, Tuple

import numpy as np

from bitcode_allennlp.bits.corpus import LabelColumn


def neighbour_parts(found: np.ndarray, distances: np.ndarray, k: int, ties: str) -> List[Tuple[np.ndarray, float]]:
    """
    The k nearest of one query's candidates `found` `(m,)` at `distances` `(m,)` (m >= k, every entry at the k-th
    distance among them), as `(entries, weight)` parts: `ties="index"` the first k by (distance, entry index),
    weight 1; `ties="average"` the closer entries with weight 1 and the tied ones sharing the remaining places.
    """
    order = np.lexsort((found, distances))  # (m,) by distance, then entry index
    if ties == "index":
        return [(found[order[:k]], 1.0)]
    kth = distances[order[k - 1]]
    closer = found[distances < kth]
    tied = found[distances == kth]
    return [(closer, 1.0), (tied, (k - closer.shape[0]) / tied.shape[0])]


def neighbour_label_counts(candidate_sets: Iterable[Tuple[int, np.ndarray, np.ndarray]], rows: int, k: int,
                           ties: str, database_labels: Dict[str, np.ndarray],
                           sizes: Dict[str, int]) -> Dict[str, np.ndarray]:
    """
    Per label view, the (weighted) label counts of each query code's k nearest neighbours.

    # Parameters

    candidate_sets : `Iterable[Tuple[int, np.ndarray, np.ndarray]]`
        `(row, entries, distances)` per distinct query code (`HammingIndex.candidate_sets`).
    rows : `int`
        Distinct query codes u.
    k : `int`
        Neighbours per query.
    ties : `str`
        `"index"` or `"average"` (`neighbour_parts`).
    database_labels : `Dict[str, np.ndarray]`
        `(n,)` label ids of the database entries per view.
    sizes : `Dict[str, int]`
        Database labels L per view.

    # Returns

    `{view: counts}`, each `(u, L)` float64.
    """
    neighbours = {view: np.zeros((rows, sizes[view]), dtype=np.float64) for view in database_labels}  # (u, L)
    for row, found, distances in candidate_sets:
        parts = neighbour_parts(found, distances, k, ties)
        for view, labels in database_labels.items():
            for entries, weight in parts:
                counts = np.bincount(labels[entries], minlength=sizes[view])  # (L,)
                neighbours[view][row] += weight * counts
    return neighbours


def view_precision(neighbours: np.ndarray, inverse: np.ndarray, k: int, queries: LabelColumn,
                   database: LabelColumn, database_size: int, query_size: int) -> Dict[str, Any]:
    """
    precision@k of one label view (`precision_at_k`'s numbers for it).

    # Parameters

    neighbours : `np.ndarray`
        `(u, L)` neighbour label counts per distinct query code (`neighbour_label_counts`).
    inverse : `np.ndarray`
        `(q,)` the distinct code of each query word.
    k : `int`
        Neighbours per query.
    queries : `LabelColumn`
        The query words' labels, `(q,)` ids into their own names.
    database : `LabelColumn`
        The database entries' label ids `(n,)` (checked) and names.
    database_size, query_size : `int`
        n and q.

    # Returns

    `{"precision", "chance", "per_label", "macro", "macro_chance"}` of the view.
    """
    lookup = {name: i for i, name in enumerate(database.names)}
    to_database = np.array([lookup.get(name, -1) for name in queries.names], dtype=np.int64)  # (Lq,)
    query_labels = to_database[queries.ids]  # (q,) -1: label absent from the database
    precision = np.where(query_labels >= 0, neighbours[inverse, np.maximum(query_labels, 0)], 0.0) / k  # (q,)
    database_share = np.bincount(database.ids, minlength=len(database.names)) / database_size  # (L,)
    query_share = np.bincount(queries.ids, minlength=len(queries.names)) / query_size  # (Lq,)
    chance = float(sum(query_share[i] * database_share[j] for i, j in enumerate(to_database.tolist()) if j >= 0))
    per_label = {}
    for i, name in enumerate(queries.names):
        mask = queries.ids == i
        per_label[name] = [float(precision[mask].mean()), int(mask.sum())]
    return {"precision": float(precision.mean()), "chance": chance, "per_label": per_label,
            "macro": float(np.mean([value for value, _ in per_label.values()])),
            "macro_chance": float(np.mean([database_share[j] if j >= 0 else 0.0 for j in to_database.tolist()]))}


MEANING = textwrap.fill(
    "precision@k: of each query word's k nearest database words (Hamming distance, ties as stated), the % with the "
    "query's label, averaged over query words; chance: the same for k database words drawn at random (each label's "
    "share of the database); macro: averaged within each query label, then over labels (rare labels count as much "
    "as frequent ones). Above chance: the codes put words of one label near each other.", 118)


def takeaway(result: Dict[str, Any]) -> str:
    """One line: the view whose precision is furthest above chance, in points and as a ratio."""
    gains = {view: value - result["chance"][view] for view, value in result["precision"].items()}
    if not gains:
        return "takeaway: no label view to score."
    view = max(gains, key=lambda name: (gains[name], name))
    macro = result["macro"][view] - result["macro_chance"][view]
    return (f"takeaway: {view} is {100 * gains[view]:+.2f} points from chance ({100 * macro:+.2f} macro); "
            + ("the neighbours share labels more than random words do." if gains[view] > 0 else
               "the nearest codes do not share labels more than random words do."))


def format_precision(result: Dict[str, Any], per_label: bool = False) -> str:
    """precision@k as a markdown table (one row per label view); with `per_label` a table per view of each query
    label's precision (most frequent label first)."""
    lines = [f"precision@{result['k']} (ties: {result['ties']}): {result['queries']:,} query words "
             f"({result['distinct_query_codes']:,} distinct codes) from {result['query_corpus']}, "
             f"database {result['database']:,} words from {result['database_corpus']} "
             f"(index type {result.get('index_type', 'numpy')})",
             "", "| label | precision@k | chance | macro over labels | macro chance |", "|---|---:|---:|---:|---:|"]
    for view, value in result["precision"].items():
        lines.append(f"| {view} | {100 * value:.2f} | {100 * result['chance'][view]:.2f} | "
                     f"{100 * result['macro'][view]:.2f} | {100 * result['macro_chance'][view]:.2f} |")
    lines += ["", MEANING, takeaway(result)]
    if per_label:
        for view, labels in result["per_label"].items():
            lines += ["", f"| {view} | query words | precision@k |", "|---|---:|---:|"]
            for name, (value, count) in sorted(labels.items(), key=lambda item: (-item[1][1], item[0])):
                lines.append(f"| {name} | {count:,} | {100 * value:.2f} |")
    return "\n".join(lines)
