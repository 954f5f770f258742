"""Fast CPU prediction: a batch's tensors without AllenNLP's per-instance machinery.

AllenNLP's `Model.forward_on_instances` tensorizes a batch field by field and instance by instance
(`Batch.as_tensor_dict`: padding lengths, one padded tensor per field per instance, then stacked), moves the whole
dict to the model's device (walking every metadata list), then splits the outputs per instance. For the
validation-stage model, whose only input is the codes (`binary_codes` reader, `binary_code` indexer), that
bookkeeping cost about as much as the model. `batch_tensors` builds the same dict for the whole batch at once;
`split_outputs` is AllenNLP's per-instance split. `HashingModel.forward_on_instances` uses both on the CPU and falls
back to AllenNLP's path for anything else.

Handled: instances whose fields are exactly one `TextField` indexed by a single indexer that tensorizes a whole
batch itself (a `batch_tensor_dict(token_lists)` method, equal to its `as_padded_tensor_dict` per sentence padded
to the longest and stacked: `code_stage/binary_code_indexer.py`'s; the same indexer object in every instance),
`SequenceLabelField`s over that text field (gold tags), and `MetadataField`s, with the same field names in every
instance. The tensors are equal to `Batch.as_tensor_dict()`'s (same values, dtypes and shapes, padding included);
anything else gives `None` (the caller then takes AllenNLP's path, which also raises AllenNLP's errors, e.g. for a
batch of mixed instances). Knows no indexer by name, so `common/` does not depend on a later pipeline stage.
"""
from itertools import chain
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy
import torch
from allennlp.data import Instance, Vocabulary
from allennlp.data.fields import MetadataField, SequenceLabelField, TextField

_HANDLED = {TextField, SequenceLabelField, MetadataField}


def batch_tensors(instances: Sequence[Instance], vocab: Vocabulary) -> Optional[Dict[str, Any]]:
    """
    `Batch(instances).as_tensor_dict()` (after `index_instances(vocab)`, which this does too) for a batch of codes
    instances (module docstring), built for the whole batch at once; `None` where the instances are not of that
    kind or not ready (not indexed with their indexer: AllenNLP's path raises its error then).
    """
    if not instances:
        return None
    first = instances[0].fields
    names, kinds = tuple(first), tuple(map(type, first.values()))
    if kinds.count(TextField) != 1 or not set(kinds) <= _HANDLED:
        return None
    text_name = names[kinds.index(TextField)]
    label_names = [name for name, kind in zip(names, kinds) if kind is SequenceLabelField]
    indexers = first[text_name]._token_indexers  # type: ignore[attr-defined]
    if not isinstance(indexers, dict) or len(indexers) != 1:
        return None
    (indexer_name, indexer), = indexers.items()
    if not callable(getattr(indexer, "batch_tensor_dict", None)):
        return None  # an indexer AllenNLP tensorizes sentence by sentence
    texts = []
    for instance in instances:  # the same fields, the same indexer, tags over the codes
        fields = instance.fields
        if tuple(fields) != names or tuple(map(type, fields.values())) != kinds:
            return None
        text = fields[text_name]
        if text._token_indexers is not indexers:  # type: ignore[attr-defined]
            return None
        for name in label_names:
            if fields[name].sequence_field is not text:  # type: ignore[attr-defined]
                return None
        texts.append(text)

    for instance in instances:
        instance.index_fields(vocab)  # once per instance (its `indexed` flag), as `Batch.index_instances`
    token_lists = [(text._indexed_tokens or {}).get(indexer_name) for text in texts]  # type: ignore[attr-defined]
    if any(tokens is None for tokens in token_lists):
        return None  # indexed before it had its indexer: AllenNLP's path raises
    lengths = [len(text.tokens) for text in texts]
    tensors: Dict[str, Any] = {}
    for name, kind in zip(names, kinds):
        if kind is TextField:
            tensors[name] = {indexer_name: indexer.batch_tensor_dict(token_lists)}
        elif kind is MetadataField:
            tensors[name] = [instance.fields[name].metadata for instance in instances]  # type: ignore[attr-defined]
        else:
            labels = [instance.fields[name]._indexed_labels for instance in instances]  # type: ignore[attr-defined]
            if any(ids is None or len(ids) != n for ids, n in zip(labels, lengths)):
                return None  # not indexed (AllenNLP raises), or changed since: its path decides
            tensors[name] = padded_labels(labels, lengths)
    return tensors


def left_aligned(rows: Sequence[Sequence[int]], width: int) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """
    The int64 `(len(rows), width)` array of `rows` (ragged lists of ints), each left-aligned and padded with 0, and
    its boolean mask (True on the values): one padded tensor per row, stacked, in one numpy assignment.
    """
    lengths = numpy.array([len(row) for row in rows], dtype=numpy.int64)  # (batch,)
    mask = numpy.arange(width) < lengths[:, None]  # (batch, width)
    padded = numpy.zeros((len(rows), width), dtype=numpy.int64)  # (batch, width)
    padded[mask] = numpy.fromiter(chain.from_iterable(rows), dtype=numpy.int64, count=int(lengths.sum()))
    return padded, mask


def padded_labels(labels: List[List[int]], lengths: List[int]) -> torch.LongTensor:
    """(batch, longest) int64 label ids, 0 at padding: `SequenceLabelField.as_tensor` per instance, stacked."""
    padded, _ = left_aligned(labels, max(lengths))  # (batch, longest)
    return torch.from_numpy(padded)  # type: ignore[return-value]


def split_outputs(model, outputs: Dict[str, Any], batch_size: int) -> List[Dict[str, Any]]:
    """
    One output dict per instance, as `Model.forward_on_instances` splits a batch's outputs: tensors as numpy
    arrays (a 0-dim one, e.g. the loss, as one element), split on their first dimension; lists split by item; an
    output whose first dimension is not the batch is left out (with AllenNLP's one-time warning).
    """
    separated: List[Dict[str, Any]] = [{} for _ in range(batch_size)]
    for name, output in list(outputs.items()):
        if isinstance(output, torch.Tensor):
            if output.dim() == 0:
                output = output.unsqueeze(0)
            if output.size(0) != batch_size:
                model._maybe_warn_for_unseparable_batches(name)
                continue
            output = output.detach().cpu().numpy()
        elif len(output) != batch_size:
            model._maybe_warn_for_unseparable_batches(name)
            continue
        for instance_output, element in zip(separated, output):
            instance_output[name] = element
    return separated

