#!/usr/bin/env bash
# The exact commands for the numerics differential on the lent H200 (issue 12). Run ON the device
# from the repository root, after the staging routine of the team's GPU notes ("The whole pipeline
# there": payload parts in /tmp/stage, wheel parts in /tmp/wh, `device-setup GPU_DIR` done, so
# /tmp/site + /tmp/site2 hold CUDA vLLM and its wheels and /tmp/models the dummy-weight models).
#
#   benchmarks/gpu/numerics.sh run       # both servers in turn (eager first), numerics then conformance; ~15 min
#   benchmarks/gpu/numerics.sh poll      # the log tail and whether it finished
#   benchmarks/gpu/numerics.sh pack      # $OUT/numerics-moe.tar.xz (raw rows, records, summary, report, plot)
#
# NUMERICS_PLAN picks another plan (its file name names the run), e.g. the real-weight one:
#   NUMERICS_PLAN=benchmarks/gpu/numerics-smollm2.yaml NUMERICS_WHAT=numerics benchmarks/gpu/numerics.sh run
# (NUMERICS_WHAT=numerics skips the conformance suite; the model dir comes from smollm2-weights.sh place).
#
# `run` starts in the background (setsid) and outlives the call while the machine stays warm; poll in
# the next calls. Each server is launched by byog itself (local runtime), runs its passes and is
# stopped before the next starts, so the two never share the GPU. Afterwards, here:
#   tar -xJf numerics-moe.tar.xz -C benchmarks/results/numerics/   &&   python benchmarks/numerics_table.py
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
export PYTHONPATH=/tmp/site:/tmp/site2:$PWD
PLAN=${NUMERICS_PLAN:-benchmarks/gpu/numerics-moe.yaml}
NAME=$(basename "$PLAN" .yaml); NAME=${NAME#h200-}
RUN=/tmp/runs/$NAME
LOG=/tmp/$NAME.log
WHAT=${NUMERICS_WHAT:-numerics conformance}

case "${1:-}" in
  run)
    model=$(sed -n 's/^  path: //p' "$PLAN" | head -1)
    [ -d "$model" ] || { echo "no $model: run the staging routine (and device-setup or smollm2-weights.sh place) first"; exit 1; }
    nvidia-smi --query-gpu=index,name,memory.used,memory.total --format=csv
    setsid nohup bash -c "
      t0=\$(date +%s)
      python3 -m byog plan $PLAN  # which numerics control byog picks on this platform, and why
      for what in $WHAT; do
        python3 -m byog check \$what $PLAN --run-dir $RUN; echo \"\$what rc=\$? after \$(( \$(date +%s) - t0 )) s\"
      done
      python3 benchmarks/numerics_table.py $RUN
      echo DONE" > "$LOG" 2>&1 < /dev/null &
    echo "started (pid $!); poll with: benchmarks/gpu/numerics.sh poll" ;;
  poll)
    tail -40 "$LOG"; grep -q '^DONE' "$LOG" && echo "finished: benchmarks/gpu/numerics.sh pack" ;;
  pack)
    OUT=${OUT:?OUT: where the tarball goes}
    # server logs can be large; the tail is enough to say what ran
    for log in "$RUN"/servers/*/server.log; do tail -300 "$log" > "$log.tail" && mv "$log.tail" "$log"; done
    cp "$LOG" "$RUN/check.log"
    nvidia-smi -q > "$RUN/nvidia-smi-q.txt" 2>&1
    tar -C /tmp/runs -cJf "$OUT/$NAME.tar.xz" "$NAME" && ls -l "$OUT" ;;
  *)
    sed -n '2,17p' "$0"; exit 2 ;;
esac
