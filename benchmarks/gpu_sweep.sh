#!/usr/bin/env bash
# The exact commands run on the lent H200 machine for the GPU measurement (issue 8): byog's batch
# sweep and `vllm bench serve` side by side against ONE CUDA vLLM 0.24 server on a
# Qwen3-30B-A3B-shaped MoE with dummy weights. Run from the repository root ON the device; the
# vLLM payload and the server come from ../shared/gpu (README.md there), re-split here into three
# parts of ~58 MB (.stage/q00..q02) so staging takes three calls, not four.
#
#   benchmarks/gpu_sweep.sh stage N        copy the carried part .stage/q0{N-1} to /tmp/stage (and .stage/gpu to /tmp/gpu)
#   benchmarks/gpu_sweep.sh serve TP       start the server (TP 1: GPU 0; TP 2: GPUs 0,1) and wait for /health
#   benchmarks/gpu_sweep.sh smoke          a 2-second byog bench + a 1-point vllm bench serve: does the path run here?
#   benchmarks/gpu_sweep.sh sweep TAG      the sweep; everything lands in $OUT/TAG.tar.xz
#   benchmarks/gpu_sweep.sh restart TP     stop the running server, start one at TP in the background (no wait)
#
# Env: BATCHES (1,2,4,8,16,32,64), ISLS (1 1024), OSL (256), WAVES (3, plus 1 warm-up wave),
# SWEEP_S (time budget of the measuring part, 480 s), VLLM_TEMPERATURE (unset: vLLM bench sends none,
# so the server's default sampling applies; 0: greedy, as byog's requests). Results: benchmarks/results/h200/ (README there).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
export PYTHONPATH=/tmp/site:$PWD
# Dev mode: /server_info (the server's own config: byog records its TP size) and /reset_prefix_cache.
export VLLM_SERVER_DEV_MODE=1
MODEL=${MODEL:-qwen3-moe-30b-a3b-shape}
PORT=${PORT:-8000}; URL=http://127.0.0.1:$PORT
GPU_DIR=/tmp/gpu; TOK=${TOK:-/tmp/models/$MODEL}   # device-serve copies config + tokenizer there
OUT=${OUT:?OUT: where the results tarball goes}
BATCHES=${BATCHES:-1,2,4,8,16,32,64}; ISLS=${ISLS:-1 1024}; OSL=${OSL:-256}; WAVES=${WAVES:-3}
SWEEP_S=${SWEEP_S:-480}
# Prefix caching off: byog and vLLM's random prompts differ, and a cache hit would move TTFT (not
# TPOT) for one tool only. Everything else is the server's default.
SERVER_ARGS=(--no-enable-prefix-caching)
t0=$(date +%s)
say() { echo "[$(( $(date +%s) - t0 )) s] $*"; }

stage() {
  local n=${1:?part number 1..3}; local src=.stage/q0$((n - 1))
  mkdir -p /tmp/stage/p0$n && cp "$src"/part.* /tmp/stage/p0$n/ || exit 1
  if [ -d .stage/gpu ]; then rm -rf $GPU_DIR && cp -r .stage/gpu $GPU_DIR; fi
  say "staged $src"; ls -l /tmp/stage/*/
}

serve() {
  local tp=${1:-1}
  if [ "$tp" = 1 ]; then export CUDA_VISIBLE_DEVICES=0; fi
  nvidia-smi --query-gpu=index,name,memory.used,memory.total --format=csv
  $GPU_DIR/device-serve $GPU_DIR/models/$MODEL $GPU_DIR/models/tokenizer "${SERVER_ARGS[@]}" --tensor-parallel-size "$tp"
}

stop_server() {
  local pid; pid=$(cat /tmp/server-$PORT.pid 2>/dev/null) || return 0
  kill -- -"$pid" 2>/dev/null || kill "$pid" 2>/dev/null
  for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  # the engine's workers free the GPUs a little after the API process exits
  for _ in $(seq 60); do
    [ "$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | sort -n | tail -1)" -lt 2000 ] && break; sleep 1
  done
  say "server $pid stopped"; nvidia-smi --query-gpu=index,memory.used --format=csv,noheader
}

restart() {
  local tp=${1:-2}
  stop_server
  mv /tmp/server-$PORT.log /tmp/server-$PORT-before-tp$tp.log 2>/dev/null
  # its own session: it must outlive this call (the device kills what a call leaves in its session)
  WAIT_S=590 setsid bash benchmarks/gpu_sweep.sh serve "$tp" > /tmp/serve-tp$tp.out 2>&1 < /dev/null &
  say "server at TP $tp starting in the background (/tmp/serve-tp$tp.out)"
}

wait_health() {
  for _ in $(seq "${1:-590}"); do
    python3 -c "import urllib.request;urllib.request.urlopen('$URL/health',timeout=3)" 2>/dev/null && { say "healthy"; return 0; }
    sleep 1
  done
  say "no /health"; tail -40 /tmp/server-$PORT.log; return 1
}

smoke() {
  wait_health 600 || exit 1
  python3 -m byog bench --endpoint $URL --batch-sizes 1,4 --isl 1,16 --osl 8 --waves 1 --warmup-waves 0 \
    --tokenizer $TOK --run-dir /tmp/smoke-byog || exit 1
  python3 -c "import json; r=json.load(open('/tmp/smoke-byog/servers/endpoint/server.json')); print('TP from', r['tensor_parallel_size_from'], r['parallel_config'])"
  say "smoke ok"
}

fingerprint() {  # environment_fingerprint() (NVML) into each byog run dir's env.json, plus the raw tools' view
  local res=$1
  python3 - "$res" <<'EOF'
import json, sys
from pathlib import Path
from byog.bundles.rundir import RunDir
from byog.images.fingerprint import environment_fingerprint
from byog.ioutil import atomic_write_json
env = environment_fingerprint()
for run in sorted(p for p in Path(sys.argv[1]).glob("byog-isl*") if p.is_dir()):
    atomic_write_json(RunDir(run).env_json, env)
atomic_write_json(Path(sys.argv[1]) / "env.json", env)
gpu = env["gpu"]
print("fingerprint:", gpu.get("count"), [g["name"] for g in gpu.get("gpus", [])], gpu.get("driver_version"),
      "CUDA", gpu.get("cuda_driver_version"), "topology", gpu.get("topology"))
EOF
  nvidia-smi -q > "$res/nvidia-smi-q.txt" 2>&1; nvidia-smi topo -m > "$res/nvidia-smi-topo.txt" 2>&1
}

left_s() {  # seconds to the deadline; a tool is not started with under 20 s left
  local left=$(( $1 - $(date +%s) )); [ "$left" -ge 20 ] && echo "$left" || echo 0
}

sweep() {
  local tag=${1:?tag}; local res=/tmp/res/$tag; local deadline=$(( $(date +%s) + SWEEP_S ))
  rm -rf "$res"; mkdir -p "$res"
  wait_health 590 || exit 1
  fingerprint "$res"   # first too: a cut-short call still has it
  python3 -c "import urllib.request;print(urllib.request.urlopen('$URL/server_info?config_format=json',timeout=60).read().decode())" \
    > "$res/server_info.json" 2>&1
  for isl in $ISLS; do
    local left; left=$(left_s $deadline); [ "$left" = 0 ] && { say "out of time before byog ISL $isl"; break; }
    say "byog ISL $isl (${left} s left)"
    timeout "$left" python3 -m byog bench --endpoint $URL --model $MODEL --tokenizer $TOK --workload batch \
      --batch-sizes "$BATCHES" --isl "$isl" --osl "$OSL" --waves "$WAVES" --warmup-waves 1 \
      --run-dir "$res/byog-isl$isl" --json > "$res/byog-isl$isl.json" 2> "$res/byog-isl$isl.err"
    say "byog ISL $isl rc=$?"; tail -3 "$res/byog-isl$isl.err"
    left=$(left_s $deadline); [ "$left" = 0 ] && { say "out of time before vllm ISL $isl"; break; }
    say "vllm bench serve ISL $isl (${left} s left)"
    timeout "$left" python3 benchmarks/h200_vllm_bench.py --base-url $URL --model $MODEL --tokenizer $TOK \
      --isl "$isl" --osl "$OSL" --batch-sizes ${BATCHES//,/ } --waves "$WAVES" --out "$res/vllm" ${VLLM_TEMPERATURE:+--temperature $VLLM_TEMPERATURE} \
      > "$res/vllm-isl$isl.log" 2>&1
    say "vllm ISL $isl rc=$?"; grep "^vllm b" "$res/vllm-isl$isl.log"
    pack "$tag"   # after each step: a call cut short still brings back what was measured
  done
  fingerprint "$res"
  pack "$tag"
}

pack() {
  local tag=$1; local res=/tmp/res/$tag
  cp /tmp/server-$PORT.log "$res/server.log" 2>/dev/null
  XZ_OPT="-3 -T0" tar -C /tmp/res -cJf "$OUT/$tag.tar.xz.tmp" "$tag" && mv "$OUT/$tag.tar.xz.tmp" "$OUT/$tag.tar.xz" \
    && say "wrote $OUT/$tag.tar.xz ($(du -h "$OUT/$tag.tar.xz" | cut -f1))"
}

cmd=${1:?stage|serve|smoke|sweep|restart}; shift
"$cmd" "$@"
