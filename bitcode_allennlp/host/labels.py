"""Labels a model never saw: one clear error naming the sentence's file and line, instead of AllenNLP's raw
``KeyError: "'B-XYZ' not found in vocab namespace 'labels'"`` from deep inside the data loader.

An extension of AllenNLP (patch ``label_errors``, installed when `allennlp.data.instance` is imported;
`bitcode_allennlp.host.extensions`): `Instance.index_fields` turns a `KeyError` of a field into a `DataFormatError`
``<file>, line <n>: <field> 'B-XYZ' is not a label of the model (namespace 'labels', 9 labels: B-LOC, ...)``; the
sentence's place comes from its `metadata["source"]`, which every reader of this package sets. `allennlp evaluate`,
`hash-corpus` and training report it that way. The span parser does not need it for its gold trees: an unseen phrase
label is a miss for EVALB (`parsing/dataset_readers/ptb_spans.py`).
"""
from typing import Any

from bitcode_allennlp.host.patching import patch

MAX_LISTED = 12  # labels listed in the message


def label_error(instance: Any, vocab: Any, name: str, error: KeyError):
    """The `DataFormatError` for `error`, raised while field `name` of `instance` was indexed with `vocab`."""
    from bitcode_allennlp.host.errors import DataFormatError

    field = instance.fields[name]
    namespace = getattr(field, "_label_namespace", None)
    labels = getattr(field, "labels", None)
    unseen = None
    if namespace is not None and isinstance(labels, (list, tuple)):
        known = vocab.get_token_to_index_vocabulary(namespace)
        unseen = next((label for label in labels if isinstance(label, str) and label not in known), None)
    metadata = instance.fields.get("metadata")
    source = getattr(metadata, "metadata", {}).get("source") if metadata is not None else None
    path, _, line = (source or "").rpartition(":")
    if not path:
        path, line = "<input>", ""
    if unseen is None:
        message = f"{name}: {error.args[0] if error.args else error}"
    else:
        known = list(vocab.get_token_to_index_vocabulary(namespace))
        listed = ", ".join(known[:MAX_LISTED]) + (", ..." if len(known) > MAX_LISTED else "")
        message = (f"{name} {unseen!r} is not a label of the model (namespace {namespace!r}, {len(known)} labels: "
                   f"{listed}); evaluate with data in the model's label set")
    return DataFormatError(path, int(line) if line.isdigit() else None, message)


def install_label_errors(module) -> None:
    """`allennlp.data.instance`: `Instance.index_fields` reports an unseen label with the sentence's place."""

    def named_errors(original):
        def index_fields(self, vocab) -> None:
            if self.indexed:
                return
            for name, field in self.fields.items():
                try:
                    field.index(vocab)
                except KeyError as error:
                    raise label_error(self, vocab, name, error) from None
            self.indexed = True

        return index_fields

    patch(module.Instance, "index_fields", named_errors, mark="label_errors",
          reason="a label the model never saw: DataFormatError with the sentence's file and line")
