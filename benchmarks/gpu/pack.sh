#!/bin/bash
# Fills .dev/a, .dev/b, .dev/c, .dev/curve_a, .dev/curve_b, .dev/bb_a and .dev/bb_b (ignored through
# .git/info/exclude): what travels to a GPU machine that has Python 3.12, torch 2.11 and no network, as `carry` of
# its calls (64 MiB each, the tracked tree included). Run from the repository root with the project's venv active;
# `bash benchmarks/gpu/pack.sh bb` fills only .dev/bb_a and .dev/bb_b (bit_budget.py's parse cells, curve.sh).
set -e
grep -qx /.dev/ .git/info/exclude || echo /.dev/ >> .git/info/exclude
mkdir -p .dev/whl .dev/a .dev/b .dev/c
ONLY=$1
split_model() {  # split_model MODEL PACK_A PACK_B BYTES: MODEL's sparse weights cut at BYTES, its other files in PACK_A
  python - "$@" <<'PY'
import shutil
import sys
from pathlib import Path
model, first, second, cut = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
weights = Path(model, "sparse.safetensors").read_bytes()
Path(first, "minilm.part1").write_bytes(weights[:cut])
Path(second, "minilm.part2").write_bytes(weights[cut:])
shutil.rmtree(Path(first, "minilm_files"), ignore_errors=True)
shutil.copytree(model, Path(first, "minilm_files"), ignore=shutil.ignore_patterns("sparse.safetensors"))
PY
}
PLAT="--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform manylinux_2_34_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_31_x86_64"
# The AllenNLP stack the GPU image lacks (its own numpy, scipy, torch, ... are used), versions of constraints.txt
for p in PySocks==1.7.1 allennlp==2.10.1 allennlp-models==2.10.1 annotated-types==0.8.0 base58==2.1.1 blis==1.3.4 boto3==1.44.5 botocore==1.44.5 cached_path==1.8.10 catalogue==2.0.10 cffi==2.1.1 confection==1.3.4 cryptography==50.0.2 cymem==2.0.16 dill==0.4.1 google-api-core==2.44.0 google-auth==2.62.2 google-cloud-core==2.8.0 google-cloud-storage==3.17.1 google-resumable-media==2.11.0 googleapis-common-protos==1.76.0 huggingface_hub==0.36.2 jmespath==1.1.0 jsonnet==0.22.0 lmdb==3.0.0 more-itertools==11.2.1 murmurhash==1.0.16 nltk==3.9.4 opentelemetry-api==1.45.2 preshed==3.0.15 pydantic==2.14.3 pydantic_core==2.50.4 s3transfer==0.19.3 spacy==3.8.18 srsly==2.5.6 tensorboardX==2.6.5 termcolor==3.3.0 thinc==8.3.14 tokenizers==0.22.2 transformers==4.57.6 typing-inspection==0.4.5 wasabi==1.1.3 weasel==1.0.1 conllu==6.0.0 smart_open==9.0.2 cloudpathlib==0.26.0 proto-plus==1.29.0 pyasn1==0.6.5 pyasn1_modules==0.4.2 google-crc32c==1.9.0 spacy-legacy==3.0.12 spacy-loggers==1.0.5 py-rouge==1.1 ftfy==6.3.1 wcwidth==0.9.4 sacremoses==0.2.0 pycparser==3.12  setuptools==81.0.0; do
  python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp $PLAT -d .dev/whl $p
done
pip wheel -q --no-deps -w .dev/whl fairscale==0.4.13 word2number==1.1      # sdists only: pure Python
bash benchmarks/gpu/build_site.sh 3.12 site312
tar cJf .dev/site312.tar.xz -C .dev/site312 .
if [ "$ONLY" != bb ]; then
cp .dev/site312.tar.xz .dev/a/ && cp .dev/site312.tar.xz .dev/c/
python benchmarks/gpu/make_model.py pos             # .dev/minilm_pos: the config, tokenizer, sparse.safetensors
tar cJf .dev/a/data.tar.xz -C ../shared/data/pos/ud_english_ewt en_ewt-ud-train.conllu en_ewt-ud-dev.conllu
cp .dev/a/data.tar.xz .dev/c/
split_model .dev/minilm_pos .dev/a .dev/b 32000000         # call A: stack, data, first part; call B: the rest
rm -rf .dev/c/minilm_files && cp -r .dev/a/minilm_files .dev/c/
cp benchmarks/gpu/setup_probe.sh benchmarks/gpu/run_b.py .dev/a/ && cp benchmarks/gpu/run_b.py .dev/b/
cp benchmarks/gpu/speed.sh .dev/c/
# curve.sh (training_curve.py cells, both tasks): .dev/curve_a (stack, EWT and BTC, first part), .dev/curve_b
mkdir -p .dev/curve_a .dev/curve_b
python benchmarks/gpu/make_model.py pos ner         # .dev/minilm_pos_ner: the rows EWT and BTC index
cp .dev/site312.tar.xz .dev/curve_a/
tar cJf .dev/curve_a/data.tar.xz -C ../shared/data pos/ud_english_ewt/en_ewt-ud-train.conllu \
  pos/ud_english_ewt/en_ewt-ud-dev.conllu ner/btc/conll2012/train ner/btc/conll2012/development
split_model .dev/minilm_pos_ner .dev/curve_a .dev/curve_b 28000000
fi
# bit_budget.py's CRAFT parse cells (curve.sh with PACK=bb): .dev/bb_a (stack, CRAFT train and dev, first part), .dev/bb_b
mkdir -p .dev/bb_a .dev/bb_b
python benchmarks/gpu/make_model.py parse           # .dev/minilm_parse: the rows CRAFT's train and dev index
cp .dev/site312.tar.xz .dev/bb_a/
tar cJf .dev/bb_a/data.tar.xz -C ../shared/data const/craft/craft-train.tree const/craft/craft-dev.tree
split_model .dev/minilm_parse .dev/bb_a .dev/bb_b 30000000
for d in a b c curve_a curve_b bb_a bb_b; do du -cb .dev/$d | tail -1 | sed "s/total/.dev\/$d (+ the tracked tree: at most 64 MiB a call)/"; done
