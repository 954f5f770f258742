"""Statistics of the binary codes a hashing model assigns to words, accumulated over an epoch.

Where this sits in the pipeline: the hashing-stage models (`hash_crf_tagger`, `hash_span_parser`) call it in
`forward` with the hash layer's ego-attention scores of the current batch (bit i = score > 0, `Codes.score_bits`) and
the gold labels, and report it from `get_metrics`. It tells, while training, whether the codes are used
(distinct, balanced bits) and whether they agree with the task (same label <-> same code), the property the
validation stage relies on (paper §4, Figure 4).

Definitions (N = number of words seen, K bits, p_i = share of words whose bit i is 1):

* `code_distinct` = (number of distinct codes among the N words) / N.
* `code_bit_entropy` = mean_i H(p_i), H(p) = -p log2 p - (1-p) log2 (1-p) with 0 log 0 = 0; 1.0 when every
  bit is 1 for exactly half of the words, 0.0 when every bit is constant.
* `code_bit_balance` = mean_i min(p_i, 1 - p_i) / 0.5; also 1.0 for balanced bits and 0.0 for constant ones,
  but linear in p.
* pair statistics, over the C(M, 2) unordered pairs of distinct word occurrences among the M words with a
  label (a negative label means "no label": such words count for the three statistics above only):
  `code_same_label_same_code` = (pairs with the same label and the same code) / (pairs with the same label);
  `code_diff_label_diff_code` = (pairs with different labels and different codes) / (pairs with different
  labels);
* `code_codes_per_label` = (number of distinct codes among the M labelled words) / (number of distinct labels
  among them), 0.0 when M = 0; 1.0 when there are as many codes as labels, as with one code per label. With
  `code_same_label_same_code` and `code_diff_label_diff_code` it is the "HashMetric" triple of torchglyph, the
  authors' training library.

A statistic whose denominator is 0 (no words, no same-label pairs, ...) is reported as 0.0, as AllenNLP's
metrics do.

Exact pair counts without storing words: with n(c, l) the number of words with code c and label l,
same label = sum_l C(n_l, 2), same code = sum_c C(n_c, 2), both = sum_(c,l) C(n(c,l), 2), and by
inclusion-exclusion different label and different code = C(M, 2) - same label - same code + both. We keep the
table n(c, l) as tensors (unique `(code, label)` rows and their counts). The margins n_c (over labelled words) and
n_l are kept as tables too, built from the same reduced rows, so `code_codes_per_label` = (codes c with n_c > 0)
/ (labels l with n_l > 0) is exact across workers as well.

Distributed training: the metric reduces in `get_metric`, incrementally. `__call__` only adds to local
"pending" counts (no communication, so it may be called anywhere). `get_metric` is a collective call -- every
worker must call it, as `GradientDescentTrainer` does after every batch and at the end of each epoch -- and
merges the pending counts of all workers into a global table that every worker keeps: per-bit counts and
totals with `all_reduce`, the `(code, label, count)` rows by gathering fixed-size tensors (the row counts
are gathered first, every worker pads to the largest, then `all_gather`). We gather tensors rather than
`all_gather_object` to avoid pickling and to stay on the backend's device (NCCL needs CUDA tensors). Only the
rows added since the last `get_metric` travel, so the cost per call is about one batch, not the epoch.
"""
import math
from typing import Dict, List, Optional, Tuple

import torch
import torch.distributed as dist

from allennlp.common.checks import ConfigurationError
from allennlp.common.util import is_distributed
from allennlp.nn.util import distributed_device
from allennlp.training.metrics.metric import Metric

from bitcode_allennlp.common.code_value import Codes
from bitcode_allennlp.common.code_format import check_num_bits


def _merge(keys: torch.Tensor, counts: torch.Tensor):
    """Sums the counts of equal `(code, label)` rows; drops rows with count 0."""
    if keys.size(0) == 0:
        return keys, counts
    unique, inverse = torch.unique(keys, dim=0, return_inverse=True)  # (u, 2), (n,)
    summed = torch.zeros(unique.size(0), dtype=torch.long).index_add_(0, inverse, counts)  # (u,)
    keep = summed > 0  # (u,)
    return unique[keep], summed[keep]  # (u', 2), (u',)


def _added_pairs(table: Dict, key, count: int) -> int:
    """Adds `count` words to `table[key]` and returns the new pairs: C(n + count, 2) − C(n, 2)."""
    before = table.get(key, 0)
    table[key] = before + count
    return count * before + count * (count - 1) // 2


@Metric.register("code_metrics")
class CodeMetrics(Metric):
    """
    Distinctness, bit balance and label agreement of K-bit word codes, over an epoch (definitions in the
    module docstring). `get_metric` returns the keys `code_distinct`, `code_bit_entropy`, `code_bit_balance`,
    `code_same_label_same_code`, `code_diff_label_diff_code` and `code_codes_per_label`.

    Registered as a `Metric` with name "code_metrics". Reduces exactly across distributed workers; in that
    case `get_metric` must be called by every worker (see the module docstring).

    # Parameters

    num_bits : `int`, optional (default = `None`)
        K, at most 63 (codes are packed into int64). By default taken from the first batch; every batch must
        then have the same K.
    """

    supports_distributed = True

    def __init__(self, num_bits: Optional[int] = None) -> None:
        if num_bits is not None:
            check_num_bits(num_bits, error=ConfigurationError)
        self._fixed_num_bits = num_bits
        self.reset()

    def reset(self) -> None:
        self._num_bits: Optional[int] = self._fixed_num_bits
        # Global (already reduced) state.
        self._ones: Optional[torch.Tensor] = None  # (K,) words with bit i = 1
        self._total = 0  # words
        # Count tables, updated incrementally from each sync's new rows (O(new rows), not O(epoch)), with the
        # running pair sums Σ C(n, 2) they imply.
        self._code_counts: Dict[int, int] = {}  # code -> words (all words)
        self._both_counts: Dict[Tuple[int, int], int] = {}  # (code, label) -> labelled words
        self._labelled_code_counts: Dict[int, int] = {}  # code -> labelled words
        self._label_counts: Dict[int, int] = {}  # label -> words
        self._labelled = 0
        self._same_both = self._same_code = self._same_label = 0
        # Local state added since the last `get_metric`.
        self._pending_ones: Optional[torch.Tensor] = None  # (K,)
        self._pending_total = 0
        self._pending_keys: List[torch.Tensor] = []  # [(n, 2)]
        self._pending_counts: List[torch.Tensor] = []  # [(n,)]

    def __call__(  # type: ignore[override]
        self,
        bits: torch.Tensor,
        gold_labels: Optional[torch.Tensor] = None,
        mask: Optional[torch.BoolTensor] = None,
    ) -> None:
        """
        # Parameters

        bits : `torch.Tensor`
            `(batch, words, K)` bits: a `BoolTensor`, or any real tensor whose positive entries are 1 bits
            (hash scores, ±1 codes, 0/1), see `bitcode_allennlp.common.code_value.Codes.score_bits`.
        gold_labels : `torch.LongTensor`, optional
            `(batch, words)` gold label ids. Negative ids, and `None` for the whole batch, mean "no label":
            those words count for `code_distinct` and the bit statistics only.
        mask : `torch.BoolTensor`, optional
            `(batch, words)`, true for real words. Default: all words.
        """
        bits, gold_labels, mask = self.detach_tensors(bits, gold_labels, mask)
        bits = Codes.score_bits(bits)  # (batch, words, K) bool
        num_bits = bits.size(-1)
        if self._num_bits is None:
            self._num_bits = check_num_bits(num_bits, name="CodeMetrics' bits per code", error=ConfigurationError)
        elif num_bits != self._num_bits:
            raise ConfigurationError(f"CodeMetrics got {num_bits} bits, expected {self._num_bits}")
        # Work on the batch's device; only per-bit counts and unique (code, label) rows go to the CPU.
        bits = bits.reshape(-1, num_bits)  # (n, K)
        if gold_labels is None:
            labels = torch.full((bits.size(0),), -1, dtype=torch.long, device=bits.device)  # (n,)
        else:
            labels = gold_labels.reshape(-1).long().to(bits.device)  # (n,)
        if mask is not None:
            keep = mask.reshape(-1).bool().to(bits.device)  # (n,)
            bits, labels = bits[keep], labels[keep]  # (m, K), (m,)
        labels = labels.clamp(min=-1)  # (m,) every "no label" is -1
        if self._pending_ones is None:
            self._pending_ones = torch.zeros(num_bits, dtype=torch.long)  # (K,)
        self._pending_ones += bits.long().sum(0).cpu()  # (K,)
        self._pending_total += bits.size(0)
        codes = Codes.packed_tensor(bits)  # (m,)
        keys = torch.stack([codes, labels], dim=-1)  # (m, 2)
        keys, counts = torch.unique(keys, dim=0, return_counts=True)  # (u, 2), (u,)
        keys, counts = keys.cpu(), counts.cpu()  # (u, 2), (u,)
        self._pending_keys.append(keys)
        self._pending_counts.append(counts)

    # --------------------------------------------------------------------------------- reduction
    def _take_pending(self):
        keys = torch.cat(self._pending_keys) if self._pending_keys else torch.zeros(0, 2, dtype=torch.long)
        counts = (
            torch.cat(self._pending_counts) if self._pending_counts else torch.zeros(0, dtype=torch.long)
        )
        keys, counts = _merge(keys, counts)  # (u, 2), (u,)
        ones, total = self._pending_ones, self._pending_total
        self._pending_ones, self._pending_total = None, 0
        self._pending_keys, self._pending_counts = [], []
        return ones, total, keys, counts

    def _sync(self) -> None:
        """Moves the pending counts of all workers into the global state."""
        ones, total, keys, counts = self._take_pending()
        if is_distributed():
            device = distributed_device()
            world_size = dist.get_world_size()
            # 1. Row counts and K of every worker (K = 0: this worker has seen nothing yet).
            header = torch.tensor([keys.size(0), self._num_bits or 0], dtype=torch.long, device=device)
            headers = [torch.zeros_like(header) for _ in range(world_size)]  # world × (2,)
            dist.all_gather(headers, header)
            headers_t = torch.stack(headers).cpu()  # (world, 2)
            ks = {int(k) for k in headers_t[:, 1].tolist() if k > 0}
            if len(ks) > 1:
                raise ConfigurationError(f"CodeMetrics: workers disagree on the number of bits: {sorted(ks)}")
            if not ks:
                return  # no worker has seen any word
            num_bits = ks.pop()
            if self._num_bits is None:
                self._num_bits = num_bits
            # 2. Per-bit counts and totals.
            sums = torch.zeros(num_bits + 1, dtype=torch.long)  # (K + 1,)
            if ones is not None:
                sums[:num_bits] = ones
            sums[num_bits] = total
            sums = sums.to(device)  # (K + 1,)
            dist.all_reduce(sums, op=dist.ReduceOp.SUM)
            sums = sums.cpu()  # (K + 1,)
            ones, total = sums[:num_bits], int(sums[num_bits].item())
            # 3. The (code, label, count) rows, padded to the largest worker's number of rows.
            max_rows = int(headers_t[:, 0].max().item())
            rows = torch.zeros(max_rows, 3, dtype=torch.long)  # (max_rows, 3), padding has count 0
            rows[: keys.size(0), :2] = keys
            rows[: keys.size(0), 2] = counts
            rows = rows.to(device)  # (max_rows, 3)
            gathered = [torch.zeros_like(rows) for _ in range(world_size)]  # world × (max_rows, 3)
            dist.all_gather(gathered, rows)
            all_rows = torch.cat(gathered).cpu()  # (world * max_rows, 3)
            keys, counts = all_rows[:, :2], all_rows[:, 2]  # (r, 2), (r,)
        if ones is None or self._num_bits is None:
            return
        if self._ones is None:
            self._ones = torch.zeros(self._num_bits, dtype=torch.long)  # (K,)
        self._ones += ones  # (K,)
        self._total += total
        for (code, label), count in zip(keys.tolist(), counts.tolist()):
            if count <= 0:
                continue
            self._code_counts[code] = self._code_counts.get(code, 0) + count
            if label < 0:
                continue
            self._labelled += count
            self._same_both += _added_pairs(self._both_counts, (code, label), count)
            self._same_code += _added_pairs(self._labelled_code_counts, code, count)
            self._same_label += _added_pairs(self._label_counts, label, count)

    # ------------------------------------------------------------------------------------ metric
    def get_metric(self, reset: bool = False) -> Dict[str, float]:
        """
        # Returns

        `Dict[str, float]` with `code_distinct`, `code_bit_entropy`, `code_bit_balance`,
        `code_same_label_same_code`, `code_diff_label_diff_code` and `code_codes_per_label`.
        """
        self._sync()
        metrics = self._compute()
        if reset:
            self.reset()
        return metrics

    def _compute(self) -> Dict[str, float]:
        metrics = {
            "code_distinct": 0.0,
            "code_bit_entropy": 0.0,
            "code_bit_balance": 0.0,
            "code_same_label_same_code": 0.0,
            "code_diff_label_diff_code": 0.0,
            "code_codes_per_label": 0.0,
        }
        if self._total == 0 or self._ones is None:
            return metrics
        metrics["code_distinct"] = len(self._code_counts) / self._total

        p = self._ones.double() / self._total  # (K,)
        entropy = -(torch.xlogy(p, p) + torch.xlogy(1 - p, 1 - p)) / math.log(2)  # (K,)
        metrics["code_bit_entropy"] = float(entropy.mean().item())
        metrics["code_bit_balance"] = float((torch.minimum(p, 1 - p) / 0.5).mean().item())

        if self._label_counts:  # every word counted there is labelled, so also 1+ code
            metrics["code_codes_per_label"] = len(self._labelled_code_counts) / len(self._label_counts)
        total_pairs = self._labelled * (self._labelled - 1) // 2
        if total_pairs == 0:
            return metrics
        both, same_code, same_label = self._same_both, self._same_code, self._same_label
        diff_label = total_pairs - same_label
        diff_label_diff_code = total_pairs - same_label - same_code + both
        if same_label > 0:
            metrics["code_same_label_same_code"] = both / same_label
        if diff_label > 0:
            metrics["code_diff_label_diff_code"] = diff_label_diff_code / diff_label
        return metrics
