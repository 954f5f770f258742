"""Do the codes carry the task? Probes that read only the codes of a train corpus and are scored on a dev corpus
(`allennlp bits probe`), beside the word-majority baseline that reads the words.

Both corpora are codes corpora of the same K (`allennlp hash-corpus` output). Labels are one label view of
`corpus.label_views` (`tag` by default: the tags, or for a parsing corpus the preterminal POS tags, so parsing
corpora are probed on their POS). The label set is the train corpus's: a dev word whose label never occurs in train
counts as wrong for every predictor. Every tie between labels is broken by the same **label priority**: more train
words first, then the label's name (`LabelColumn` order).

**Accuracies on dev** (share of dev words whose predicted label is their gold label; `accuracy` in the result):

* `word_majority` (the reference, it reads words): each dev word gets the most frequent train label of its word
  string (case-sensitive, exact); a word absent from train gets the label of highest priority (the most frequent).
* `most_frequent_label`: every dev word gets the label of highest priority (reads nothing).
* `code_majority`: each dev word gets the most frequent train label of its exact code; a code absent from train gets
  the most frequent label.
* `knn` (k = 1, 10, 100; `min(k, train words)`): a dev word with code q votes over the train words nearest to q by
  Hamming distance d = popcount(q XOR x). With d_k the k-th smallest distance from q, C the train words at
  distance < d_k and T those at distance d_k, the votes of label l are (words of C with label l) + (k - |C|) / |T|
  (words of T with label l): the expected votes when the tied words at d_k are taken in a uniformly random order
  (as `allennlp bits precision --ties average`); the label with the most votes wins, ties by label priority. The
  votes are compared exactly (as integers, multiplied by |T|). Computed over the distinct train codes with their
  per-label word counts, for each distinct dev code once.
* `linear_word`, `mlp_word`: a linear layer (K -> L), and an MLP (K -> `hidden` -> GELU -> L, as the codes study's
  `code_report.py`), on the word's bits as +-1; `linear_window3`, `mlp_window3`: the same on the +-1 bits of the
  previous word, the word and the next word (3K inputs; zeros beyond the sentence edges). Trained on every train
  word with cross-entropy, Adam (`lr`), mini-batches of `batch_size` words in a random order, for `epochs` passes
  or, when that is fewer, `min_steps` optimizer steps (rounded up to whole passes); torch on CPU, parameters and
  order from `torch.manual_seed(seed)` inside `torch.random.fork_rng` (the caller's random state is untouched).
  The prediction is the arg-max logit.

`seen`: the share of dev words whose word string (`word`), and whose code (`code`), occurs in train.

**Hash metric on dev** (`hash_metric`, the "HashMetric" triple of torchglyph, the authors' training library, as the
training metric `code_metrics`), over the dev words and their dev labels of the view (labels absent from train
included), with the C(m, 2) unordered pairs of distinct word occurrences: `same_label_same_code` = (pairs with the
same label and the same code) / (pairs with the same label), `diff_label_diff_code` = (pairs with different labels
and different codes) / (pairs with different labels), `codes_per_label` = distinct codes / distinct labels; 0.0
where the denominator is 0. Pairs are counted exactly from the (code, label) count table, none is enumerated.
(`allennlp bits stats`' `codes_per_label` differs: a mean over labels of each label's codes, a shared code counts
once per label.)

**Code geometry on train** (descriptive, from the train corpus alone):

* `distance.same_word`: for each word type (exact string) with n >= 2 occurrences, the mean Hamming distance over
  its C(n, 2) pairs of occurrences, then the mean over these types (each type counts once, so frequent words do not
  dominate); `distance.random_pair`: the mean Hamming distance over all C(N, 2) pairs of train words. Both are exact
  (no sampling): with m_i the occurrences whose bit i is 1, the pairs that differ in bit i are m_i (n - m_i), so the
  mean distance is sum_i m_i (n - m_i) / C(n, 2). `distance.word_types` is the number of types averaged.
* `eta_squared.per_bit[i]`: the correlation ratio of bit i (as +-1) and the label over the train words,
  sum_l n_l (mean_l - mean)^2 / sum_n (b_n - mean)^2: the share of the bit's variance explained by the label (1: the
  label determines the bit; 0: the bit's mean is the same for every label); `None` for a constant bit.
  `eta_squared.mean` is the mean over the other bits (`None` if every bit is constant).

**Counts** (`counts`): train and dev words and sentences, distinct codes in each, train word types, `codes_per_type`
(distinct (word, code) pairs / word types, train), and the most frequent train word (ties: the first in string
order) with its occurrences and distinct codes.
"""
import logging
import math
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from bitcode_allennlp.bits.corpus import CodesCorpus, distinct_strings
from bitcode_allennlp.bits.hamming import hamming_distances
from bitcode_allennlp.bits.stats import pairs
from bitcode_allennlp.common.code_value import Codes

logger = logging.getLogger(__name__)

KS = (1, 10, 100)
BLOCK_ELEMENTS = 1 << 21
"""Distinct dev codes x distinct train codes per block of the k-NN distance matrix (2M: 2 MiB of uint8 distances,
16 MiB of int64 bin indices)."""


def label_priority(counts: np.ndarray) -> np.ndarray:
    """Label ids by priority: more words first (`counts` (L,)), then the smaller id. Shape `(L,)`."""
    counts = np.asarray(counts, dtype=np.int64)  # (L,)
    return np.lexsort((np.arange(counts.shape[0]), -counts))  # (L,)


def best_labels(votes: np.ndarray, priority: np.ndarray) -> np.ndarray:
    """The label with the most votes in each row of `votes` (rows, L), ties by `priority` (L,). Shape `(rows,)`."""
    return priority[np.argmax(votes[:, priority], axis=1)]  # (rows,)


def majority_table(keys: np.ndarray, labels: np.ndarray, num_labels: int) -> Tuple[np.ndarray, np.ndarray]:
    """Distinct `keys` (sorted, (u,)) and their per-label counts (u, L) over the entries `keys` (n,), `labels`
    (n,)."""
    distinct, inverse = np.unique(keys, return_inverse=True)  # (u,), (n,)
    flat = inverse.reshape(-1).astype(np.int64) * num_labels + labels  # (n,)
    counts = np.bincount(flat, minlength=distinct.shape[0] * num_labels)  # (u * L,)
    return distinct, counts.reshape(distinct.shape[0], num_labels)  # (u,), (u, L)


def lookup(distinct: np.ndarray, queries: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Row of each query in the sorted `distinct` (u,) and whether it is there: `(rows, found)`, both `(q,)`."""
    if distinct.shape[0] == 0:
        return np.zeros(queries.shape[0], dtype=np.int64), np.zeros(queries.shape[0], dtype=bool)
    rows = np.minimum(np.searchsorted(distinct, queries), distinct.shape[0] - 1)  # (q,)
    return rows, distinct[rows] == queries  # (q,), (q,)


def majority_predictions(train_keys: np.ndarray, train_labels: np.ndarray, dev_keys: np.ndarray,
                         priority: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Each dev key's most frequent train label (ties by `priority`; unseen: `priority[0]`), and whether the key
    was seen: `(predictions, seen)`, both `(dev,)`."""
    distinct, counts = majority_table(train_keys, train_labels, priority.shape[0])  # (u,), (u, L)
    best = best_labels(counts, priority)  # (u,)
    rows, seen = lookup(distinct, dev_keys)  # (dev,), (dev,)
    return np.where(seen, best[rows], priority[0]), seen  # (dev,), (dev,)


def knn_predictions(train_codes: np.ndarray, train_labels: np.ndarray, dev_codes: np.ndarray, num_bits: int,
                    priority: np.ndarray, ks: Sequence[int] = KS) -> Dict[int, np.ndarray]:
    """
    Hamming k-NN vote predictions of each dev code for each k (definition and ties in the module docstring).

    # Returns

    `{k: predictions}`, each `(len(dev_codes),)` int64 label ids.
    """
    num_labels = priority.shape[0]
    distinct, label_counts = majority_table(train_codes, train_labels, num_labels)  # (U, L)
    words = label_counts.sum(axis=1).astype(np.float64)  # (U,)
    queries, inverse = np.unique(dev_codes, return_inverse=True)  # (Q,), (dev,)
    n = int(train_codes.shape[0])
    width = num_bits + 1
    from scipy.sparse import csr_matrix

    sparse_counts = csr_matrix(label_counts.astype(np.float64))  # (U, L)
    predictions = {k: np.empty(queries.shape[0], dtype=np.int64) for k in ks}  # (Q,) each
    block = max(1, BLOCK_ELEMENTS // max(1, distinct.shape[0]))
    kmax = min(max(ks), n)
    for start in range(0, queries.shape[0], block):
        distances = hamming_distances(queries[start : start + block], distinct)  # (B, U) uint8
        b = distances.shape[0]
        bins = distances + (width * np.arange(b, dtype=np.int64))[:, None]  # (B, U) int64
        per_distance = np.bincount(bins.reshape(-1), weights=np.broadcast_to(words, distances.shape).reshape(-1),
                                   minlength=b * width).reshape(b, width)  # (B, K + 1) words at distance d
        within = np.cumsum(per_distance, axis=1)  # (B, K + 1) words at distance <= d
        reach = np.argmax(within >= kmax, axis=1)  # (B,) the k_max-th smallest distance
        rows, columns = np.nonzero(distances <= reach[:, None])  # (P,), (P,)
        select = csr_matrix((np.ones(rows.shape[0]), (rows * width + distances[rows, columns], columns)),
                            shape=(b * width, distinct.shape[0]))  # (B * (K + 1), U)
        histogram = (select @ sparse_counts).toarray().reshape(b, width, num_labels)  # (B, K + 1, L)
        cumulative = np.cumsum(histogram, axis=1)  # (B, K + 1, L) label counts at distance <= d
        index = np.arange(b)  # (B,)
        for k in ks:
            kk = min(k, n)
            kth = np.argmax(within >= kk, axis=1)  # (B,) d_k
            tied = per_distance[index, kth]  # (B,) |T|
            closer_labels = np.where((kth > 0)[:, None], cumulative[index, np.maximum(kth - 1, 0)], 0.0)  # (B, L)
            closer = closer_labels.sum(axis=1)  # (B,) |C|
            votes = closer_labels * tied[:, None] + (kk - closer)[:, None] * histogram[index, kth]  # (B, L)
            predictions[k][start : start + b] = best_labels(votes, priority)
    return {k: values[inverse.reshape(-1)] for k, values in predictions.items()}  # (dev,) each


def window_features(signs: np.ndarray, corpus: CodesCorpus) -> np.ndarray:
    """The +-1 bits `signs` (n, K) of the previous word, the word and the next word, zeros beyond the sentence
    edges. Shape `(n, 3K)`."""
    return window_rows(signs, corpus.sentence_ids)


def window_rows(features: np.ndarray, sentence_ids: np.ndarray) -> np.ndarray:
    """Rows of `features` (n, d) of the previous word, the word and the next word (words in corpus order,
    `sentence_ids` (n,)), zeros beyond the sentence edges. Shape `(n, 3d)`."""
    n = features.shape[0]
    same_as_next = np.zeros(n, dtype=bool)  # (n,)
    same_as_next[:-1] = sentence_ids[:-1] == sentence_ids[1:]
    previous = np.zeros_like(features)  # (n, d)
    previous[1:] = np.where(same_as_next[:-1, None], features[:-1], 0.0)
    following = np.zeros_like(features)  # (n, d)
    following[:-1] = np.where(same_as_next[:-1, None], features[1:], 0.0)
    return np.concatenate([previous, features, following], axis=1)  # (n, 3d)


@dataclass(frozen=True)
class ProbeOptions:
    """
    The knobs of `probe_codes` and `train_probe` (training in the module docstring); the defaults are `allennlp bits
    probe`'s.

    # Parameters

    view : `str`, optional (default = `"tag"`)
        The label view: `tag`, or for BIO-style NER tags also `prefix` or `type`.
    seed : `int`, optional (default = `0`)
        The probes' torch seed.
    ks : `Sequence[int]`, optional (default = `(1, 10, 100)`)
        The k of the k-NN votes.
    epochs, min_steps, hidden, batch_size, lr
        The probes' training: passes, fewest optimizer steps, the MLP's hidden units, words per batch, Adam's rate
        (defaults 8, 300, 512, 1024, 2e-3).
    threads : `int`, optional (default = `1`)
        torch threads while the probes train (put back after; `None` keeps torch's setting). One is the fastest
        for these small matrices on a machine shared with other jobs.
    """

    view: str = "tag"
    seed: int = 0
    ks: Sequence[int] = KS
    epochs: int = 8
    min_steps: int = 300
    hidden: int = 512
    batch_size: int = 1024
    lr: float = 2e-3
    threads: Optional[int] = 1


def train_probe(x_train: np.ndarray, y_train: np.ndarray, x_dev: np.ndarray, num_labels: int,
                hidden: Optional[int], options: Optional[ProbeOptions] = None, **knobs: Any) -> Tuple[np.ndarray, int]:
    """
    Trains a linear probe (`hidden=None`) or an MLP of `hidden` units on `x_train` (n, d) float32 and `y_train` (n,)
    label ids, and predicts `x_dev` (m, d) (training in the module docstring), with the seed, epochs, min_steps,
    batch_size, lr and threads of `options` (default `ProbeOptions()`; its `hidden` is not used), each overridden
    by a keyword of `knobs` (`seed=0`, ...).

    # Returns

    `(predictions, steps)`: `(m,)` int64 label ids and the number of optimizer steps taken.
    """
    import torch

    options = replace(options or ProbeOptions(), **knobs)
    inputs = torch.from_numpy(np.ascontiguousarray(x_train, dtype=np.float32))  # (n, d)
    targets = torch.from_numpy(np.asarray(y_train, dtype=np.int64))  # (n,)
    batches = math.ceil(inputs.shape[0] / options.batch_size)
    passes = max(options.epochs, math.ceil(options.min_steps / batches))
    saved_threads = torch.get_num_threads()
    if options.threads is not None:
        torch.set_num_threads(options.threads)
    try:
        return _train(torch, inputs, targets, x_dev, num_labels, hidden, passes, options), passes * batches
    finally:
        torch.set_num_threads(saved_threads)


def _train(torch: Any, inputs: Any, targets: Any, x_dev: np.ndarray, num_labels: int, hidden: Optional[int],
           passes: int, options: ProbeOptions) -> np.ndarray:
    """The training loop of `train_probe`; returns the `(m,)` predictions."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(options.seed)
        if hidden is None:
            model = torch.nn.Linear(inputs.shape[1], num_labels)
        else:
            model = torch.nn.Sequential(torch.nn.Linear(inputs.shape[1], hidden), torch.nn.GELU(),
                                        torch.nn.Linear(hidden, num_labels))
        optimizer = torch.optim.Adam(model.parameters(), lr=options.lr)
        for _ in range(passes):
            order = torch.randperm(inputs.shape[0])  # (n,)
            for begin in range(0, inputs.shape[0], options.batch_size):
                chosen = order[begin : begin + options.batch_size]  # (batch,)
                loss = torch.nn.functional.cross_entropy(model(inputs[chosen]), targets[chosen])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        with torch.no_grad():
            dev = torch.from_numpy(np.ascontiguousarray(x_dev, dtype=np.float32))  # (m, d)
            predictions = torch.cat([model(dev[begin : begin + 8192]).argmax(-1)
                                     for begin in range(0, dev.shape[0], 8192)])  # (m,)
    return predictions.numpy().astype(np.int64)


def mean_pair_distance(bits: np.ndarray, groups: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """
    The exact mean Hamming distance over the pairs of entries within each group (module docstring).

    # Parameters

    bits : `(n, K)` 0/1; groups : `(n,)` group id of each entry, 0 .. G - 1.

    # Returns

    `(means, sizes)`, both `(G,)`: the mean (NaN for a group of fewer than 2 entries) and the group sizes.
    """
    num_groups = int(groups.max()) + 1 if groups.shape[0] else 0
    sizes = np.bincount(groups, minlength=num_groups).astype(np.float64)  # (G,)
    ones = np.stack([np.bincount(groups, weights=bits[:, i], minlength=num_groups)
                     for i in range(bits.shape[1])], axis=1)  # (G, K)
    differing = (ones * (sizes[:, None] - ones)).sum(axis=1)  # (G,) pairs times differing bits
    pairs = sizes * (sizes - 1) / 2  # (G,)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(pairs > 0, differing / pairs, np.nan), sizes  # (G,), (G,)


def eta_squared(bits: np.ndarray, labels: np.ndarray, num_labels: int) -> List[Optional[float]]:
    """Per bit, the correlation ratio of the bit as +-1 (`bits` (n, K) 0/1) and `labels` (n,) (module docstring)."""
    signs = 2.0 * bits.astype(np.float64) - 1.0  # (n, K)
    mean = signs.mean(axis=0)  # (K,)
    total = ((signs - mean) ** 2).sum(axis=0)  # (K,)
    sizes = np.bincount(labels, minlength=num_labels).astype(np.float64)  # (L,)
    sums = np.stack([np.bincount(labels, weights=signs[:, i], minlength=num_labels)
                     for i in range(signs.shape[1])], axis=1)  # (L, K)
    present = sizes > 0  # (L,)
    label_means = sums[present] / sizes[present, None]  # (L', K)
    between = (sizes[present, None] * (label_means - mean) ** 2).sum(axis=0)  # (K,)
    return [None if t <= 1e-12 else float(min(1.0, bw / t)) for bw, t in zip(between.tolist(), total.tolist())]


def word_ids(train: CodesCorpus, dev: CodesCorpus) -> Tuple[List[str], np.ndarray, np.ndarray]:
    """The distinct words of both corpora, sorted, and the id of every word into them in corpus order: `(words,
    train ids (n,), dev ids (m,))`, int64. Ids, not a numpy str array: its fixed-width dtype drops trailing NULs and
    so would merge ``"w\\x00"`` with ``"w"`` (`distinct_strings`)."""
    train_words = [word for sentence in train.sentences for word in sentence["words"]]
    dev_words = [word for sentence in dev.sentences for word in sentence["words"]]
    names, ids = distinct_strings(train_words + dev_words)  # (T,), (n + m,)
    return names, ids[: len(train_words)], ids[len(train_words) :]


def hash_metric(codes: np.ndarray, labels: np.ndarray) -> Dict[str, float]:
    """`{"same_label_same_code", "diff_label_diff_code", "codes_per_label"}` of the words with `codes` (n,) and
    `labels` (n,) (module docstring): with n(c, l) the words of code c and label l, same label = sum_l C(n_l, 2),
    same code = sum_c C(n_c, 2), both = sum_(c,l) C(n(c,l), 2), different label and code = C(n, 2) - same label -
    same code + both."""
    codes, labels = np.asarray(codes).reshape(-1), np.asarray(labels, dtype=np.int64).reshape(-1)  # (n,), (n,)
    _, code_ids, code_counts = np.unique(codes, return_inverse=True, return_counts=True)  # (n,), (C,)
    _, label_ids, label_counts = np.unique(labels, return_inverse=True, return_counts=True)  # (n,), (L,)
    cells = code_ids.reshape(-1).astype(np.int64) * label_counts.shape[0] + label_ids.reshape(-1)  # (n,)
    cell_counts = np.unique(cells, return_counts=True)[1]  # (J,)
    n = codes.shape[0]
    same_label, same_code, both = pairs(label_counts), pairs(code_counts), pairs(cell_counts)
    diff_label = n * (n - 1) // 2 - same_label
    return {"same_label_same_code": both / same_label if same_label else 0.0,
            "diff_label_diff_code": (diff_label - same_code + both) / diff_label if diff_label else 0.0,
            "codes_per_label": code_counts.shape[0] / label_counts.shape[0] if n else 0.0}


def probe_codes(train: CodesCorpus, dev: CodesCorpus, options: Optional[ProbeOptions] = None,
                **knobs: Any) -> Dict[str, Any]:
    """
    Probes of the train codes scored on dev, the word-majority baseline, code geometry and counts (every number is
    defined in the module docstring).

    # Parameters

    train, dev : `CodesCorpus`
        Codes corpora of the same K with gold labels (`read_codes_corpus`).
    options : `ProbeOptions`, optional (default = `ProbeOptions()`)
        The label view, the k of the k-NN votes and the probes' training.
    **knobs
        Fields of `ProbeOptions` that override `options` (`view="type"`, `seed=3`, ...).

    # Returns

    `{"train", "dev", "num_bits", "label_view", "labels", "accuracy": {"word_majority", "most_frequent_label",
    "code_majority", "knn": {k: acc}, "linear_word", "linear_window3", "mlp_word", "mlp_window3"}, "seen": {"word",
    "code"}, "hash_metric": {"same_label_same_code", "diff_label_diff_code", "codes_per_label"} (dev), "distance":
    {"same_word", "random_pair", "word_types"}, "eta_squared": {"mean", "per_bit"}, "counts":
    {...}, "probe_training": {...}}`, accuracies and shares in [0, 1].

    # Raises

    `ValueError` when K differs, or the view is not in both corpora.
    """
    options = replace(options or ProbeOptions(), **knobs)
    view = options.view
    _check_corpora(train, dev, view, options.ks)
    num_labels = len(train.labels[view].names)
    y_train = train.labels[view].ids.astype(np.int64)  # (n,)
    y_dev = dev_label_ids(train, dev, view)  # (m,) -1: a label absent from train
    priority = label_priority(np.bincount(y_train, minlength=num_labels))  # (L,)
    words, train_words, dev_words = word_ids(train, dev)  # (T,), (n,), (m,)
    accuracy, seen = majority_accuracies(train, dev, train_words, dev_words, y_train, y_dev, priority, options.ks)
    train_bits = train.code_value.bits_as(np.uint8)  # (n, K)
    probes, steps = probe_accuracies(train, dev, train_bits, y_train, y_dev, num_labels, options)
    return {
        "train": train.path, "dev": dev.path, "num_bits": train.num_bits, "label_view": view, "labels": num_labels,
        "accuracy": {**accuracy, **probes},
        "seen": seen,
        "hash_metric": hash_metric(dev.codes, dev.labels[view].ids),
        **code_geometry(train, dev, words, train_words, train_bits, y_train, num_labels),
        "probe_training": {"seed": options.seed, "epochs": options.epochs, "min_steps": options.min_steps,
                           "hidden": options.hidden, "batch_size": options.batch_size, "lr": options.lr,
                           "threads": options.threads, "steps": steps},
    }


def _check_corpora(train: CodesCorpus, dev: CodesCorpus, view: str, ks: Sequence[int]) -> None:
    """`ValueError` unless both corpora have codes of one K and the label view, and every k is positive."""
    if train.num_bits != dev.num_bits:
        raise ValueError(f"train has {train.num_bits}-bit codes, dev {dev.num_bits}-bit codes")
    for name, corpus in (("train", train), ("dev", dev)):
        if view not in corpus.labels:
            raise ValueError(f"label view {view!r} is not in the {name} corpus {corpus.path} (it has: "
                             f"{', '.join(corpus.labels) or 'no gold tags or trees'})")
    if any(k < 1 for k in ks):
        raise ValueError(f"every k must be positive, got {list(ks)}")


def dev_label_ids(train: CodesCorpus, dev: CodesCorpus, view: str) -> np.ndarray:
    """The dev words' labels of `view` as train label ids, `(m,)` int64, -1 for a label that no train word has
    (logged as a warning)."""
    names = train.labels[view].names
    to_train = {name: i for i, name in enumerate(names)}
    dev_map = np.array([to_train.get(name, -1) for name in dev.labels[view].names], dtype=np.int64)  # (L_dev,)
    y_dev = dev_map[dev.labels[view].ids]  # (m,) -1: a label absent from train
    unseen = int(np.sum(y_dev < 0))
    if unseen:
        missing = sorted({name for name, i in zip(dev.labels[view].names, dev_map) if i < 0})
        shown = ", ".join(missing[:8]) + (", ..." if len(missing) > 8 else "")
        share = 100 * unseen / max(len(y_dev), 1)
        logger.warning("bits probe: %s of %s dev words (%.1f%%) have a %s label that no train word has (%s): no "
                       "probe can get them right%s", f"{unseen:,}", f"{len(y_dev):,}", share, view, shown,
                       "; no dev label occurs in train" if unseen == len(y_dev) else "")
    return y_dev


def _accuracy(predictions: np.ndarray, gold: np.ndarray) -> float:
    return float(np.mean(predictions == gold))


def majority_accuracies(train: CodesCorpus, dev: CodesCorpus, train_words: np.ndarray, dev_words: np.ndarray,
                        y_train: np.ndarray, y_dev: np.ndarray, priority: np.ndarray,
                        ks: Sequence[int]) -> Tuple[Dict[str, Any], Dict[str, float]]:
    """
    Dev accuracy of the predictors that need no training (word majority, most frequent label, code majority, k-NN
    votes): train and dev word ids `(n,)`, `(m,)` (`word_ids`), train and dev label ids `(n,)`, `(m,)`, label
    `priority` `(L,)`.

    # Returns

    `(accuracy, seen)`: `{"word_majority", "most_frequent_label", "code_majority", "knn": {k: acc}}` and the shares
    of dev words whose word and code occur in train, `{"word", "code"}`.
    """
    word_predictions, word_seen = majority_predictions(train_words, y_train, dev_words, priority)  # (m,), (m,)
    code_predictions, code_seen = majority_predictions(train.codes, y_train, dev.codes, priority)  # (m,), (m,)
    knn = knn_predictions(train.codes, y_train, dev.codes, train.num_bits, priority, ks)
    accuracy = {"word_majority": _accuracy(word_predictions, y_dev),
                "most_frequent_label": _accuracy(np.full(len(dev), priority[0]), y_dev),
                "code_majority": _accuracy(code_predictions, y_dev),
                "knn": {str(k): _accuracy(values, y_dev) for k, values in knn.items()}}
    return accuracy, {"word": float(word_seen.mean()), "code": float(code_seen.mean())}


def probe_accuracies(train: CodesCorpus, dev: CodesCorpus, train_bits: np.ndarray, y_train: np.ndarray,
                     y_dev: np.ndarray, num_labels: int,
                     options: ProbeOptions) -> Tuple[Dict[str, float], Dict[str, int]]:
    """
    Dev accuracy of the linear and MLP probes on the bits of the word and of 3 words (`train_bits` (n, K) 0/1; train
    and dev label ids `(n,)`, `(m,)`).

    # Returns

    `(accuracy, steps)`: `{"linear_word", "linear_window3", "mlp_word", "mlp_window3"}`, and the optimizer steps
    of each probe.
    """
    dev_bits = Codes(dev.codes, train.num_bits).bits_as(np.uint8)  # (m, K)
    train_signs = 2.0 * train_bits.astype(np.float32) - 1.0  # (n, K)
    dev_signs = 2.0 * dev_bits.astype(np.float32) - 1.0  # (m, K)
    inputs = {"word": (train_signs, dev_signs),
              "window3": (window_features(train_signs, train), window_features(dev_signs, dev))}
    probes: Dict[str, float] = {}
    steps: Dict[str, int] = {}
    for kind, size in (("linear", None), ("mlp", options.hidden)):
        for context, (x_train, x_dev) in inputs.items():
            predictions, taken = train_probe(x_train, y_train, x_dev, num_labels, size, options)
            probes[f"{kind}_{context}"] = _accuracy(predictions, y_dev)
            steps[f"{kind}_{context}"] = taken
    return probes, steps


def code_geometry(train: CodesCorpus, dev: CodesCorpus, words: Sequence[str], train_words: np.ndarray,
                  train_bits: np.ndarray, y_train: np.ndarray, num_labels: int) -> Dict[str, Any]:
    """`{"distance", "eta_squared", "counts"}` of `probe_codes` (module docstring): the train word ids `(n,)` into
    `words` (`word_ids`), their bits `(n, K)` and label ids `(n,)`."""
    word_types, type_ids = np.unique(train_words, return_inverse=True)  # (T,) ids into `words`, (n,)
    type_ids = type_ids.reshape(-1)
    same, sizes = mean_pair_distance(train_bits, type_ids)  # (T,), (T,)
    repeated = sizes >= 2  # (T,)
    random_pair = mean_pair_distance(train_bits, np.zeros(len(train), dtype=np.int64))[0][0]
    per_bit = eta_squared(train_bits, y_train, num_labels)
    defined = [value for value in per_bit if value is not None]
    word_codes = np.unique(np.stack([type_ids.astype(np.uint64), train.codes], axis=1), axis=0)  # (pairs, 2)
    top = int(np.argmax(sizes))
    return {
        "distance": {"same_word": float(np.mean(same[repeated])) if repeated.any() else None,
                     "random_pair": None if math.isnan(random_pair) else float(random_pair),
                     "word_types": int(repeated.sum())},
        "eta_squared": {"mean": float(np.mean(defined)) if defined else None, "per_bit": per_bit},
        "counts": {
            "train_words": len(train), "dev_words": len(dev), "train_sentences": len(train.sentences),
            "dev_sentences": len(dev.sentences), "train_codes": int(np.unique(train.codes).shape[0]),
            "dev_codes": int(np.unique(dev.codes).shape[0]), "train_word_types": int(word_types.shape[0]),
            "codes_per_type": float(word_codes.shape[0] / word_types.shape[0]),
            "most_frequent_word": {"word": words[int(word_types[top])], "occurrences": int(sizes[top]),
                                   "distinct_codes": int(np.unique(train.codes[type_ids == top]).shape[0])},
        },
    }


def _percent(value: Optional[float]) -> str:
    return "–" if value is None else f"{100 * value:.2f}"


def format_probe(result: Dict[str, Any]) -> str:
    """The probe result as an aligned table of dev accuracies, then the geometry and counts."""
    acc, counts, distance = result["accuracy"], result["counts"], result["distance"]
    hidden = result["probe_training"]["hidden"]
    rows = [("word majority (reference)", "the word", acc["word_majority"]),
            ("most frequent label", "nothing", acc["most_frequent_label"]),
            ("code majority", "the exact code", acc["code_majority"])]
    rows += [(f"{k}-NN Hamming vote", "the code", value) for k, value in acc["knn"].items()]
    for kind, title in (("linear", "linear probe"), ("mlp", f"MLP probe ({hidden} hidden)")):
        rows += [(title, "bits of the word", acc[f"{kind}_word"]),
                 (title, "bits of 3 words", acc[f"{kind}_window3"])]
    header = ("predictor (trained on train)", "reads", "dev accuracy")
    widths = [max(len(header[0]), *(len(r[0]) for r in rows)), max(len(header[1]), *(len(r[1]) for r in rows))]
    lines = [f"codes probe, label view {result['label_view']!r} ({result['labels']} train labels), K = "
             f"{result['num_bits']}: dev {result['dev']} ({counts['dev_words']:,} words, {counts['dev_sentences']:,} "
             f"sentences), train {result['train']} ({counts['train_words']:,} words, {counts['train_sentences']:,} "
             "sentences)", "",
             f"{header[0]:<{widths[0]}}  {header[1]:<{widths[1]}}  {header[2]}"]
    lines += [f"{name:<{widths[0]}}  {reads:<{widths[1]}}  {_percent(value):>{len(header[2])}}"
              for name, reads, value in rows]
    eta = result["eta_squared"]
    per_bit = " ".join("–" if value is None else f"{value:.2f}" for value in eta["per_bit"])
    same = "–" if distance["same_word"] is None else f"{distance['same_word']:.2f}"
    random_pair = "–" if distance["random_pair"] is None else f"{distance['random_pair']:.2f}"
    word, hashed = counts["most_frequent_word"], result["hash_metric"]
    lines += ["",
              f"dev words seen in train: {_percent(result['seen']['word'])}% by word, "
              f"{_percent(result['seen']['code'])}% by exact code",
              f"hash metric (dev, {result['label_view']}): same label -> same code "
              f"{_percent(hashed['same_label_same_code'])}%, different labels -> different codes "
              f"{_percent(hashed['diff_label_diff_code'])}%, {hashed['codes_per_label']:.2f} codes per label",
              f"mean Hamming distance (train): {same} between occurrences of the same word (mean over "
              f"{distance['word_types']:,} word types with 2+ occurrences), {random_pair} between any two words",
              f"bit variance explained by the label (eta^2, train): mean "
              f"{'–' if eta['mean'] is None else format(eta['mean'], '.3f')}; per bit: {per_bit}",
              f"train: {counts['train_codes']:,} distinct codes, {counts['train_word_types']:,} word types, "
              f"{counts['codes_per_type']:.2f} codes per type; most frequent word {word['word']!r}: "
              f"{word['occurrences']:,} occurrences, {word['distinct_codes']:,} codes; dev: {counts['dev_codes']:,} "
              "distinct codes"]
    return "\n".join(lines)


def summary_line(result: Dict[str, Any]) -> str:
    """The main numbers on one line (for the experiment's summary)."""
    acc, distance = result["accuracy"], result["distance"]
    knn = ", ".join(f"{k}-NN {_percent(value)}" for k, value in acc["knn"].items())
    same = "–" if distance["same_word"] is None else f"{distance['same_word']:.2f}"
    random_pair = "–" if distance["random_pair"] is None else f"{distance['random_pair']:.2f}"
    return (f"codes on dev ({result['label_view']}): code majority {_percent(acc['code_majority'])}, {knn}, "
            f"bit MLP {_percent(acc['mlp_word'])}, window-3 MLP {_percent(acc['mlp_window3'])}; word majority "
            f"{_percent(acc['word_majority'])} (reference); same-word distance {same} vs {random_pair} (train)")
