#!/usr/bin/env bash
# One plan two ways on the lent H200 (issue 38): interleaved (both servers up under vLLM's sleep mode,
# ABBA waves with a swap between) and sequential (the same plan with interleave: false). Run ON the
# device from the repository root after the staging routine of the team's GPU notes and
# `benchmarks/gpu/smollm2-weights.sh place` (real SmolLM2 bf16 weights in /tmp/models/smollm2-bf16).
#
#   benchmarks/gpu/interleave.sh run    # interleaved, then sequential; ~10 min
#   benchmarks/gpu/interleave.sh poll   # the log tail and whether it finished
#   benchmarks/gpu/interleave.sh pack   # $OUT/interleave-smollm2.tar.xz (both run directories)
#   INTERLEAVE_PLAN=benchmarks/gpu/eval-turns-smollm2.yaml benchmarks/gpu/interleave.sh run|poll|pack
#                                       # another plan the same two ways ($OUT/eval-turns-smollm2.tar.xz)
#
# One line for the lead: `benchmarks/gpu/interleave.sh run`, poll until finished, then `pack`.
# Afterwards, here:
#   tar -xJf interleave-smollm2.tar.xz -C benchmarks/results/   &&   python benchmarks/interleave_table.py
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
export PYTHONPATH=/tmp/site:/tmp/site2:$PWD
PLAN=${INTERLEAVE_PLAN:-benchmarks/gpu/interleave-smollm2.yaml}
TAG=$(basename "$PLAN" .yaml)
SEQ_PLAN=/tmp/$TAG-sequential.yaml
ROOT=/tmp/runs/$TAG
LOG=/tmp/$TAG.log

case "${1:-}" in
  run)
    [ -d /tmp/models/smollm2-bf16 ] || { echo "no /tmp/models/smollm2-bf16: run benchmarks/gpu/smollm2-weights.sh place first"; exit 1; }
    sed -e 's/interleave: true/interleave: false/' -e 's/^name: \(.*\)$/name: \1-sequential/' "$PLAN" > "$SEQ_PLAN"
    mkdir -p "$ROOT"
    nvidia-smi --query-gpu=index,name,memory.used,memory.total --format=csv
    setsid nohup bash -c "
      t0=\$(date +%s)
      python3 -m byog run $PLAN --run-dir $ROOT/interleaved; echo \"interleaved rc=\$? after \$(( \$(date +%s) - t0 )) s\"
      nvidia-smi --query-gpu=memory.used --format=csv
      python3 -m byog run $SEQ_PLAN --run-dir $ROOT/sequential; echo \"sequential rc=\$? after \$(( \$(date +%s) - t0 )) s\"
      python3 benchmarks/interleave_table.py $ROOT
      echo DONE" > "$LOG" 2>&1 < /dev/null &
    echo "started (pid $!); poll with: benchmarks/gpu/interleave.sh poll" ;;
  poll)
    tail -40 "$LOG"; grep -q '^DONE' "$LOG" && echo "finished: benchmarks/gpu/interleave.sh pack" ;;
  pack)
    OUT=${OUT:?OUT: where the tarball goes}
    for log in "$ROOT"/*/servers/*/server.log; do tail -400 "$log" > "$log.tail" && mv "$log.tail" "$log"; done
    rm -f "$ROOT"/*/bundle.tar.gz  # re-made from the raw records by `byog pack` if needed; keeps the tarball small
    cp "$LOG" "$ROOT/run.log"
    nvidia-smi -q > "$ROOT/nvidia-smi-q.txt" 2>&1
    tar -C /tmp/runs -cJf "$OUT/$TAG.tar.xz" "$TAG" && ls -l "$OUT" ;;
  *)
    sed -n '2,13p' "$0"; exit 2 ;;
esac
