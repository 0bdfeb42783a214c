#!/usr/bin/env bash
# The agentic plan (benchmarks/agentic/plan.yaml, issue 15) on the lent H200, against the CUDA vLLM
# 0.24 server of the Qwen3-30B-A3B-shaped MoE (dummy weights; SmolLM2's tokenizer, so the sessions
# and trace requests are token for token those of the CPU run). The plan's two servers are the
# same model with the prefix cache on and off; each is started here in turn and measured with
# `byog bench --endpoint URL --plan ... --server NAME`. Run from the repository root ON the device;
# staging is ../shared/gpu's routine (README there), with the parts benchmarks/gpu_sweep.sh uses.
#
#   benchmarks/gpu/agentic.sh stage N       copy carried part .stage/q0{N-1} to /tmp/stage (calls 1-3; as gpu_sweep.sh)
#   benchmarks/gpu/agentic.sh on TAG        start the cache-on server, wait for /health, run its points -> $OUT/TAG.tar.xz
#   benchmarks/gpu/agentic.sh off TAG       stop it, start the cache-off server, run its points   -> $OUT/TAG.tar.xz
#
# Each of `on` and `off` fits one 10-minute call (start-up ~200 s with torch.compile + CUDA graphs,
# then 2-4 min of points); run them back to back, then `python benchmarks/agentic_table.py import
# TAG.tar.xz` here commits the run directories and `python benchmarks/agentic_table.py` re-prints.
# Env: MAX_MODEL_LEN (8192), PORT (8000).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
export PYTHONPATH=/tmp/site:$PWD
export VLLM_SERVER_DEV_MODE=1  # /server_info: byog records the TP size the server runs
MODEL=qwen3-moe-30b-a3b-shape
PORT=${PORT:-8000}; URL=http://127.0.0.1:$PORT
GPU_DIR=/tmp/gpu; TOK=/tmp/models/$MODEL
PLAN=benchmarks/agentic/plan.yaml
OUT=${OUT:?OUT: where the results tarball goes}
t0=$(date +%s)
say() { echo "[$(( $(date +%s) - t0 )) s] $*"; }

serve() {  # $1: on | off. Prefix caching is vLLM's default; both report cached tokens per request.
  local args=(--enable-prompt-tokens-details)
  [ "$1" = off ] && args+=(--no-enable-prefix-caching)
  export CUDA_VISIBLE_DEVICES=0
  WAIT_S=560 $GPU_DIR/device-serve $GPU_DIR/models/$MODEL $GPU_DIR/models/tokenizer "${args[@]}"
}

stop_server() {
  local pid; pid=$(cat /tmp/server-$PORT.pid 2>/dev/null) || return 0
  kill -- -"$pid" 2>/dev/null || kill "$pid" 2>/dev/null
  for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  for _ in $(seq 60); do  # the engine frees the GPU a little after the API process exits
    [ "$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | sort -n | tail -1)" -lt 2000 ] && break; sleep 1
  done
  rm -f /tmp/server-$PORT.pid; say "server $pid stopped"
}

measure() {  # $1: on | off, $2: tag
  local mode=$1 tag=$2; local res=/tmp/res/$tag; mkdir -p "$res"
  serve "$mode" || { tail -40 /tmp/server-$PORT.log; exit 1; }
  nvidia-smi -q > "$res/nvidia-smi-q-$mode.txt" 2>&1
  say "byog bench --server cache-$mode"
  timeout 420 python3 -m byog bench --endpoint $URL --plan $PLAN --server cache-$mode --model $MODEL --tokenizer $TOK \
    --run-dir "$res/byog-cache-$mode" --json > "$res/byog-cache-$mode.json" 2> "$res/byog-cache-$mode.err"
  say "byog rc=$?"; tail -5 "$res/byog-cache-$mode.err"
  python3 - "$res/byog-cache-$mode" <<'EOF'
import sys
from pathlib import Path
from byog.core.io import atomic_write_json
from byog.core.paths import RunDir
from byog.images.fingerprint import environment_fingerprint
atomic_write_json(RunDir(Path(sys.argv[1])).env_json, environment_fingerprint())
EOF
  cp /tmp/server-$PORT.log "$res/server-cache-$mode.log" 2>/dev/null
  XZ_OPT="-3 -T0" tar -C /tmp/res -cJf "$OUT/$tag.tar.xz.tmp" "$tag" && mv "$OUT/$tag.tar.xz.tmp" "$OUT/$tag.tar.xz" \
    && say "wrote $OUT/$tag.tar.xz ($(du -h "$OUT/$tag.tar.xz" | cut -f1))"
}

cmd=${1:?stage|on|off}; shift
case $cmd in
  stage) bash benchmarks/gpu_sweep.sh stage "$@" ;;
  on) measure on "${1:?tag}" ;;
  off) stop_server; measure off "${1:?tag}"; stop_server ;;
  *) echo "unknown command $cmd"; exit 2 ;;
esac
