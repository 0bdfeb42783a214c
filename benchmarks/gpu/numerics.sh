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
# `run` starts in the background (setsid) and outlives the call while the machine stays warm; poll in
# the next calls. Each server is launched by byog itself (local runtime), runs its passes and is
# stopped before the next starts, so the two never share the GPU. Afterwards, here:
#   tar -xJf numerics-moe.tar.xz -C benchmarks/results/numerics/   &&   python benchmarks/numerics_table.py
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
export PYTHONPATH=/tmp/site:/tmp/site2:$PWD
PLAN=benchmarks/gpu/numerics-moe.yaml
RUN=/tmp/runs/numerics-moe
LOG=/tmp/numerics-moe.log

case "${1:-}" in
  run)
    [ -d /tmp/models/qwen3-moe-30b-a3b-shape ] || { echo "no /tmp/models: run the staging routine and device-setup first"; exit 1; }
    nvidia-smi --query-gpu=index,name,memory.used,memory.total --format=csv
    setsid nohup bash -c "
      t0=\$(date +%s)
      python3 -m byog check numerics $PLAN --run-dir $RUN; echo \"numerics rc=\$? after \$(( \$(date +%s) - t0 )) s\"
      python3 -m byog check conformance $PLAN --run-dir $RUN; echo \"conformance rc=\$? after \$(( \$(date +%s) - t0 )) s\"
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
    tar -C /tmp/runs -cJf "$OUT/numerics-moe.tar.xz" numerics-moe && ls -l "$OUT" ;;
  *)
    sed -n '2,17p' "$0"; exit 2 ;;
esac
