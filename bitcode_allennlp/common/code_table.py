"""The aligned table of one predicted sentence: a row per word with its tag, entity, hex code and bits.

Where this sits: pure Python on a prediction in the format `allennlp predict` writes (`words`, `codes`, `bits`, and
`tags` / `entities` / `tree` when the model has a task head). `bitcode_allennlp.api.Encoded.to_table` and the light
`allennlp bits table` (on `allennlp predict` output) print it.
"""
from typing import Any, Dict, List, Mapping, Optional, Sequence


def entity_labels(num_words: int, entities: Sequence[Mapping[str, Any]]) -> List[str]:
    """Per word, the label of the entity it is in (`start` to `end`, exclusive), or ""."""
    labels = [""] * num_words
    for entity in entities:
        for position in range(entity["start"], entity["end"]):
            labels[position] = entity["label"]
    return labels


def table_columns(prediction: Mapping[str, Any]) -> Dict[str, List[str]]:
    """The table's columns, each a header and one cell per word: word, tag, entity, code, bits (those present)."""
    words = list(prediction["words"])
    columns: Dict[str, List[str]] = {"word": words}
    if prediction.get("tags") is not None:
        columns["tag"] = list(prediction["tags"])
    if prediction.get("entities") is not None:
        columns["entity"] = entity_labels(len(words), prediction["entities"])
    if prediction.get("codes"):
        columns["code"] = list(prediction["codes"])
    if prediction.get("bits"):
        columns["bits"] = ["".join(str(int(bit)) for bit in row) for row in prediction["bits"]]
    return columns


def code_table(prediction: Mapping[str, Any]) -> str:
    """The columns of `table_columns` aligned, a header line then one line per word; the tree (if any) last."""
    columns = table_columns(prediction)
    widths = {name: max([len(name)] + [len(value) for value in values]) for name, values in columns.items()}
    lines = ["  ".join(name.ljust(widths[name]) for name in columns).rstrip()]
    for row in zip(*columns.values()):
        lines.append("  ".join(value.ljust(widths[name]) for name, value in zip(columns, row)).rstrip())
    tree: Optional[str] = prediction.get("tree")
    if tree is not None:
        lines.append(tree)
    return "\n".join(lines)
