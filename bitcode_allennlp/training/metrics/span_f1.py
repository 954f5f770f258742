"""Span-based F1 (CoNLL style) that is exact under distributed training.

Where this sits in the pipeline: the NER taggers of both stages (hashing and validation) report it from
`get_metrics`, on BIOUL (= BIOES) tags. AllenNLP 2.10.1's `SpanBasedF1Measure` keeps per-type Python
counters and its `get_metric` raises `RuntimeError("Distributed aggregation for SpanBasedF1Measure is
currently not supported.")` as soon as a process group is initialised, so multi-GPU training with it fails.
This subclass keeps its span extraction and counting unchanged and only reduces the counters.
"""
from collections import Counter, defaultdict
from typing import Dict, List, Optional

import torch
import torch.distributed as dist

from allennlp.common.util import is_distributed
from allennlp.data.vocabulary import Vocabulary
from allennlp.training.metrics.metric import Metric
from allennlp.training.metrics.span_based_f1_measure import SpanBasedF1Measure


@Metric.register("span_f1_distributed")
class DistributedSpanF1(SpanBasedF1Measure):
    """
    `SpanBasedF1Measure` whose counters are summed over all distributed workers in `get_metric`.

    Keys of `get_metric` are those of `SpanBasedF1Measure`: `precision-overall`, `recall-overall`,
    `f1-measure-overall`, and `precision-TYPE`, `recall-TYPE`, `f1-measure-TYPE` for every span type seen
    (in gold or predictions) on any worker. Values are identical to `SpanBasedF1Measure` on the union of
    the workers' data.

    Reduction: each worker's per-type true-positive / false-positive / false-negative counters are gathered
    with one `all_gather_object` (a small dict of Python ints: exact, and the union of the types comes for
    free) and summed. The local counters are left untouched, so `get_metric(reset=False)` can be called any
    number of times. In distributed mode `get_metric` is a collective call: every worker must call it (the
    `GradientDescentTrainer` does, after every batch and at the end of each epoch). Outside a process group
    it is `SpanBasedF1Measure.get_metric`.

    Registered as a `Metric` with name "span_f1_distributed".

    # Parameters

    vocabulary : `Vocabulary`
        Contains the tag namespace.
    tag_namespace : `str`, optional (default = `"labels"`)
        The namespace of the tags.
    label_encoding : `str`, optional (default = `"BIOUL"`)
        `"BIO"`, `"IOB1"`, `"BIOUL"` or `"BMES"`, as in `SpanBasedF1Measure`. Note that BIOUL span
        extraction raises `InvalidTagSequence` on ill-formed predictions, as in AllenNLP; decode with a
        constrained CRF.
    ignore_classes : `List[str]`, optional (default = `None`)
        Span types to leave out, as in `SpanBasedF1Measure`.
    """

    supports_distributed = True

    def __init__(
        self,
        vocabulary: Vocabulary,
        tag_namespace: str = "labels",
        label_encoding: str = "BIOUL",
        ignore_classes: Optional[List[str]] = None,
    ) -> None:
        super().__init__(
            vocabulary,
            tag_namespace=tag_namespace,
            ignore_classes=ignore_classes,
            label_encoding=label_encoding,
        )
        self._num_tags = len(self._label_vocabulary)

    def __call__(  # type: ignore[override]
        self,
        predictions: torch.Tensor,
        gold_labels: torch.Tensor,
        mask: Optional[torch.BoolTensor] = None,
        prediction_map: Optional[torch.Tensor] = None,
    ) -> None:
        """
        # Parameters

        predictions : `torch.Tensor`
            Either class scores / probabilities of shape `(batch, words, tags)` (the argmax is taken, as
            `SpanBasedF1Measure` expects) or predicted tag ids of shape `(batch, words)`, e.g. the Viterbi
            paths of a CRF.
        gold_labels : `torch.LongTensor`
            `(batch, words)` gold tag ids.
        mask : `torch.BoolTensor`, optional
            `(batch, words)`, true for real words.
        prediction_map : `torch.Tensor`, optional
            As in `SpanBasedF1Measure`.
        """
        if predictions.dim() == gold_labels.dim():
            # Tag ids -> one-hot scores over the tag vocabulary; padding ids (e.g. -1) become tag 0.
            tag_ids = predictions.detach().long()  # (batch, words)
            if mask is not None:
                tag_ids = tag_ids.masked_fill(~mask.bool(), 0)  # (batch, words)
            predictions = torch.nn.functional.one_hot(tag_ids, num_classes=self._num_tags)  # (batch, words, tags)
        super().__call__(predictions, gold_labels, mask, prediction_map)

    def _global_counts(self):
        local = {
            "tp": dict(self._true_positives),
            "fp": dict(self._false_positives),
            "fn": dict(self._false_negatives),
        }
        gathered: List[Optional[Dict[str, Dict[str, int]]]] = [None] * dist.get_world_size()
        dist.all_gather_object(gathered, local)
        totals = {"tp": Counter(), "fp": Counter(), "fn": Counter()}
        for counts in gathered:
            for kind, per_type in counts.items():  # type: ignore[union-attr]
                totals[kind].update(per_type)
        return totals["tp"], totals["fp"], totals["fn"]

    def get_metric(self, reset: bool = False) -> Dict[str, float]:
        """
        # Returns

        `Dict[str, float]`: precision, recall and f1-measure per span type and overall, summed over
        all workers.
        """
        if not is_distributed():
            return super().get_metric(reset)
        true_positives, false_positives, false_negatives = self._global_counts()
        all_metrics: Dict[str, float] = {}
        for tag in sorted(set(true_positives) | set(false_positives) | set(false_negatives)):
            precision, recall, f1_measure = self._compute_metrics(
                true_positives[tag], false_positives[tag], false_negatives[tag]
            )
            all_metrics["precision-" + tag] = precision
            all_metrics["recall-" + tag] = recall
            all_metrics["f1-measure-" + tag] = f1_measure
        precision, recall, f1_measure = self._compute_metrics(
            sum(true_positives.values()), sum(false_positives.values()), sum(false_negatives.values())
        )
        all_metrics["precision-overall"] = precision
        all_metrics["recall-overall"] = recall
        all_metrics["f1-measure-overall"] = f1_measure
        if reset:
            self.reset()
        return all_metrics

    def reset(self) -> None:
        self._true_positives = defaultdict(int)
        self._false_positives = defaultdict(int)
        self._false_negatives = defaultdict(int)
