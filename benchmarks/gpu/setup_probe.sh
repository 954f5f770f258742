#!/bin/bash
# Device call A: unpack the AllenNLP stack, the data and half the model into /tmp; a 2-epoch speed probe of the
# EWT POS hashing stage with a random MiniLM-shaped model (same shapes, same speed) -> /tmp/probe.json.
T0=$(date +%s.%N)
set -e
mkdir -p /tmp/site /tmp/data /tmp/parts
tar xJf .dev/a/site312.tar.xz -C /tmp/site
tar xJf .dev/a/data.tar.xz -C /tmp/data
cp .dev/a/minilm.part1 /tmp/parts/; cp -r .dev/a/minilm_files /tmp/parts/; cp .dev/a/run_b.py /tmp/
source benchmarks/gpu/stack.sh
python3 -c "
import sys, torch, transformers, tokenizers, allennlp, numpy, spacy
print(sys.version.split()[0], 'torch', torch.__version__, 'transformers', transformers.__version__, 'tokenizers', tokenizers.__version__, 'numpy', numpy.__version__, 'spacy', spacy.__version__, torch.cuda.get_device_name(0))
from transformers import BertConfig, BertModel
import shutil; shutil.copytree('/tmp/parts/minilm_files', '/tmp/minilm_random', dirs_exist_ok=True)
torch.manual_seed(0); BertModel(BertConfig.from_pretrained('/tmp/minilm_random')).save_pretrained('/tmp/minilm_random')
import bitcode_allennlp.plugin; print('plugin ok')
"
echo "setup $(python3 -c "print(round($(date +%s.%N)-$T0,1))") s"
S=$(date +%s.%N)
set +e
TRAIN_DATA=/tmp/data/en_ewt-ud-train.conllu DEV_DATA=/tmp/data/en_ewt-ud-dev.conllu PLM=/tmp/minilm_random \
READER=conllu_pos TOKEN_POLICY=repair HEAD_LR=1e-3 EPOCHS=2 BETA=0.05 CUDA_DEVICE=0 \
  python3 -m allennlp train training_configs/pos_hash.jsonnet -s /tmp/probe -f > /tmp/probe.log 2>&1
RC=$?
E=$(date +%s.%N)
tail -c 1500 /tmp/probe.log | tr '\r' '\n' | tail -8
[ $RC = 0 ] || { cp /tmp/probe.log $OUT/; exit 1; }
python3 - $S $E <<'PY'
import json, os, sys
s, e = map(float, sys.argv[1:])
m0, m1 = (os.path.getmtime(f"/tmp/probe/metrics_epoch_{i}.json") for i in (0, 1))
r = {"epoch_s": m1 - m0, "startup_s": m0 - s - (m1 - m0), "end_s": e - m1, "total_s": e - s}
r.update({k: v for k, v in json.load(open("/tmp/probe/metrics.json")).items() if k.startswith("training_") and not k.startswith("training_code")})
print(json.dumps(r)); json.dump(r, open("/tmp/probe.json", "w"))
PY
S=$(date +%s.%N)
python3 -m allennlp hash-corpus /tmp/probe/model.tar.gz /tmp/data/en_ewt-ud-dev.conllu -o /tmp/probe_dev.jsonl --silent --cuda-device 0 > /tmp/hc.log 2>&1 || { tail -20 /tmp/hc.log; exit 1; }
echo "hash-corpus dev $(python3 -c "print(round($(date +%s.%N)-$S,1))") s; $(wc -l < /tmp/probe_dev.jsonl) lines"
echo "call A total $(python3 -c "print(round($(date +%s.%N)-$T0,1))") s"
