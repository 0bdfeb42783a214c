#!/usr/bin/env bash
# Issue 13 on the lent H200s: the kimi-k3-gb300 mirror (speculative headline + B sweep, claims) and
# the long-context step-time matrix, each as one `byog run` of a built-in profile, with NVML power
# and clocks sampled during every point. Run from the repository root ON the device, after the
# staging routine of the team's gpu/README.md (payload parts in /tmp/stage, wheel parts in /tmp/wh,
# `device-setup .stage/gpu` done: vLLM 0.24 in /tmp/site, byog's extra wheels incl. nvidia-ml-py
# in /tmp/site2, the dummy-weight MoE in /tmp/models/qwen3-moe-30b-a3b-shape).
#
#   benchmarks/gpu/spec_longctx.sh setup          the 131k-context model dir (YaRN config of this folder) + checks
#   benchmarks/gpu/spec_longctx.sh plan           `byog plan` of both profiles here: KV cache per point vs budget, estimate
#   benchmarks/gpu/spec_longctx.sh start NAME     `byog run` of profile h200-NAME in the background (mirror | longctx)
#   benchmarks/gpu/spec_longctx.sh poll NAME      progress; when the run has ended, pack it into $OUT
#   benchmarks/gpu/spec_longctx.sh pack NAME      $OUT/NAME.tar.xz: run dir (summary, report, raw rows, point records) + bundle
#   benchmarks/gpu/spec_longctx.sh claims         fill the mirror claims from its summary, then verify holds / moved 5% fails
#   benchmarks/gpu/spec_longctx.sh stop NAME      stop a run (SIGTERM to its session: byog stops its server)
#
# Machines: mirror = profile h200-kimi-mirror, ONE H200 (kind nvidia-h200; it pins GPU 0);
# longctx = profile h200-longctx, TWO H200s (kind nvidia-h200-x2, TP2). Device time, estimated
# from the gpu/README.md figures: mirror ~14 min (two compiled start-ups ~3.5 min each, the stock
# B sweep ~5 min, the speculative one ~2 min); longctx ~15 min (TP2 start-up ~4 min, prefill of
# 16 x 100k tokens per wave dominates). Each run outlives its call while the machine stays warm:
# start it, then poll in back-to-back calls (each call <= 10 min), then pack + claims.
# Back here: python benchmarks/h200_spec_longctx.py import FILE.tar.xz --tag NAME; then re-print.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export VLLM_USE_FLASHINFER_SAMPLER=0 TVM_FFI_DISABLE_TORCH_C_DLPACK=1 PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
export PYTHONPATH=/tmp/site:/tmp/site2:$PWD
OUT=${OUT:-/tmp/out}
RUNS=/tmp/runs
BASE=/tmp/models/qwen3-moe-30b-a3b-shape
LONG=/tmp/models/qwen3-moe-30b-a3b-shape-131k
t0=$(date +%s)
say() { echo "[$(( $(date +%s) - t0 )) s] $*"; }

setup() {
  [ -f "$BASE/config.json" ] || { echo "no $BASE: run device-setup first (gpu/README.md)"; exit 1; }
  mkdir -p "$LONG"
  cp "$BASE"/tokenizer* "$BASE"/chat_template.jinja "$LONG"/ 2>/dev/null
  cp benchmarks/gpu/models/qwen3-moe-30b-a3b-shape-131k/* "$LONG"/
  python3 -c "import json; c=json.load(open('$LONG/config.json')); print('131k config:', c['max_position_embeddings'], c['rope_parameters'])"
  python3 -c "import pynvml; pynvml.nvmlInit(); print('NVML:', pynvml.nvmlDeviceGetCount(), 'GPU(s), driver', pynvml.nvmlSystemGetDriverVersion())" \
    || echo "WARNING: no NVML here: the power fields will be absent with that reason"
  python3 -c "import vllm, byog; print('vllm', vllm.__version__, 'byog', byog.__version__)"
  nvidia-smi --query-gpu=index,name,memory.used,memory.total,power.limit,clocks.max.sm --format=csv
}

plan() {
  for name in mirror longctx; do
    say "byog plan h200-$name"
    python3 -m byog plan "h200-$name" 2>&1 | tail -60
  done
}

start() {
  local name=${1:?mirror | longctx}
  mkdir -p "$RUNS" "$OUT"
  if [ -f "$RUNS/$name.pid" ] && kill -0 "$(cat "$RUNS/$name.pid")" 2>/dev/null; then say "$name already running"; return 0; fi
  # Its own session: the run (and the vLLM server it launches) outlive this call.
  setsid nohup python3 -m byog run "h200-$name" --run-dir "$RUNS/$name" > "$RUNS/$name.log" 2>&1 < /dev/null &
  echo $! > "$RUNS/$name.pid"
  say "byog run h200-$name started (pid $(cat "$RUNS/$name.pid")); log $RUNS/$name.log"
}

poll() {
  local name=${1:?mirror | longctx}; local pid; pid=$(cat "$RUNS/$name.pid" 2>/dev/null)
  tail -c 3000 "$RUNS/$name.log"; echo
  ls "$RUNS/$name/bench"/*/ 2>/dev/null | grep -c '\.json$' | sed 's/^/point records: /'
  nvidia-smi --query-gpu=index,power.draw,clocks.sm,temperature.gpu,memory.used --format=csv,noheader
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then say "$name still running"; else say "$name has ended"; pack "$name"; fi
}

pack() {
  local name=${1:?mirror | longctx}
  mkdir -p "$OUT"
  cp "$RUNS/$name.log" "$RUNS/$name/" 2>/dev/null
  nvidia-smi -q > "$RUNS/$name/nvidia-smi-q.txt" 2>&1
  # the /metrics snapshots stay behind (their deltas are in the point records); the bundle travels whole
  XZ_OPT="-3 -T0" tar -C "$RUNS" --exclude='*.prom' -cJf "$OUT/$name.tar.xz.tmp" "$name" && mv "$OUT/$name.tar.xz.tmp" "$OUT/$name.tar.xz"
  say "wrote $OUT/$name.tar.xz ($(du -h "$OUT/$name.tar.xz" | cut -f1))"
}

claims() {
  local bundle; bundle=$(ls "$RUNS"/mirror/*.tar.gz "$RUNS"/mirror/bundle*.tar.gz 2>/dev/null | head -1)
  [ -f "$RUNS/mirror/summary.json" ] || { echo "no mirror summary yet"; exit 1; }
  python3 benchmarks/h200_mirror_claims.py fill "$RUNS/mirror/summary.json"
  cp byog/plans/claims/h200-kimi-mirror.claims.yaml "$OUT/"
  if [ -n "$bundle" ]; then
    python3 benchmarks/h200_mirror_claims.py check "$bundle" | tee "$OUT/claims-check.txt"
  else
    echo "no bundle found under $RUNS/mirror: byog run did not pack one (see $RUNS/mirror.log)"
  fi
}

stop() {
  local name=${1:?mirror | longctx}; local pid; pid=$(cat "$RUNS/$name.pid" 2>/dev/null) || return 0
  kill -TERM -- -"$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 90); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  say "$name stopped"; nvidia-smi --query-gpu=index,memory.used --format=csv,noheader
}

cmd=${1:?setup | plan | start NAME | poll NAME | pack NAME | claims | stop NAME}; shift
"$cmd" "$@"
