#!/usr/bin/env bash
# Issue 13's long-context step-time matrix on ONE H200 (kind nvidia-h200, TP1): plan
# benchmarks/gpu/h200-longctx-tp1.yaml. Runs ON the device, from the repository root of the carried
# working tree, after the staging routine (gpu/README.md): payload parts in /tmp/stage/pNN with the
# unpack into /tmp/site started (it touches /tmp/site/.ok), wheel parts' files in /tmp/wh, the
# scripts and model configs carried as .stage/gpu in the same call as `go`.
#
#   benchmarks/gpu/longctx_tp1.sh go MAX_S          wait for the unpack, device-setup, copy the checkout to
#                                                   /tmp/repo, the 131k model dir, `byog plan`, start the run
#                                                   in its own session, then poll until MAX_S of this call
#   benchmarks/gpu/longctx_tp1.sh poll MAX_S [stop] poll until the run ends (then pack into $OUT) or MAX_S;
#                                                   with `stop`, a run still going at MAX_S gets SIGTERM to its
#                                                   process group (byog keeps finished points) and is packed
#   benchmarks/gpu/longctx_tp1.sh pack              $OUT/longctx-tp1.tar.xz (run dir without *.prom)
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export VLLM_USE_FLASHINFER_SAMPLER=0 TVM_FFI_DISABLE_TORCH_C_DLPACK=1 PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
export PYTHONPATH=/tmp/site:/tmp/site2:/tmp/repo
OUT=${OUT:-/tmp/out}
RUNS=/tmp/runs
NAME=longctx-tp1
PAYLOAD_SHA=a614a87e19779d22db6fc278ace7f2ac971d593ceafd1f5346482424bef6c403
say() { echo "[$SECONDS s] $*"; }

pack() {
  mkdir -p "$OUT"
  cp "$RUNS/$NAME.log" "$RUNS/$NAME/" 2>/dev/null
  cp "$RUNS/$NAME.times" "$RUNS/$NAME/" 2>/dev/null
  nvidia-smi -q > "$RUNS/$NAME/nvidia-smi-q.txt" 2>&1
  XZ_OPT="-3 -T0" tar -C "$RUNS" --exclude='*.prom' -cJf "$OUT/$NAME.tar.xz" "$NAME"
  say "packed $OUT/$NAME.tar.xz ($(stat -c %s "$OUT/$NAME.tar.xz") bytes)"
}

running() { local pid; pid=$(cat "$RUNS/$NAME.pid" 2>/dev/null) && kill -0 "$pid" 2>/dev/null; }

poll() {
  local max=${1:?MAX_S} stop=${2:-}
  while true; do
    if ! grep -q '^up ' "$RUNS/$NAME.times" 2>/dev/null && grep -q ': up at ' "$RUNS/$NAME.log" 2>/dev/null; then
      echo "up $(date +%s.%N)" >> "$RUNS/$NAME.times"
    fi
    if ! running; then
      echo "end $(date +%s.%N)" >> "$RUNS/$NAME.times"
      say "run has ended"; tail -n 40 "$RUNS/$NAME.log"; cat "$RUNS/$NAME.times"; pack; return 0
    fi
    if [ "$SECONDS" -ge "$max" ]; then
      if [ "$stop" = stop ]; then
        say "deadline: SIGTERM to the run's process group"
        kill -TERM -- -"$(cat "$RUNS/$NAME.pid")"
        for _ in $(seq 60); do running || break; sleep 1; done
        echo "stopped $(date +%s.%N)" >> "$RUNS/$NAME.times"
        tail -n 40 "$RUNS/$NAME.log"; cat "$RUNS/$NAME.times"; pack; return 0
      fi
      say "still running at the call's deadline"; tail -n 8 "$RUNS/$NAME.log"; cat "$RUNS/$NAME.times"; return 0
    fi
    say "$(tail -n 2 "$RUNS/$NAME.log" | tr '\r' '\n' | tail -n 2 | cut -c1-160 | tr '\n' '|') $(nvidia-smi --query-gpu=power.draw,memory.used --format=csv,noheader)"
    sleep 20
  done
}

go() {
  local max=${1:?MAX_S}
  cp .stage/wh/w03/* /tmp/wh/ && mkdir -p /tmp/gpu && cp -r .stage/gpu/. /tmp/gpu/ && chmod -R u+w /tmp/gpu || exit 1
  for _ in $(seq 240); do [ -f /tmp/site/.ok ] && break; grep -q '^rc=' /tmp/unpack.log 2>/dev/null && break; sleep 1; done
  say "unpack: $(cat /tmp/unpack.log)"; say "payload sha: $(cat /tmp/payload.sha)"
  [ -f /tmp/site/.ok ] || { echo "unpack failed"; exit 1; }
  grep -q "$PAYLOAD_SHA" /tmp/payload.sha || echo "WARNING: payload sha differs from $PAYLOAD_SHA"
  /tmp/gpu/device-setup /tmp/gpu || exit 1
  mkdir -p /tmp/repo && tar --exclude=./.stage -cf - . | tar -xf - -C /tmp/repo && cd /tmp/repo || exit 1
  bash benchmarks/gpu/spec_longctx.sh setup
  say "byog plan"; python3 -m byog plan benchmarks/gpu/h200-longctx-tp1.yaml 2>&1 | tail -40
  nvidia-smi --query-gpu=index,name,memory.used,memory.total --format=csv,noheader
  mkdir -p "$RUNS"
  echo "start $(date +%s.%N)" > "$RUNS/$NAME.times"
  setsid nohup python3 -m byog run benchmarks/gpu/h200-longctx-tp1.yaml --run-dir "$RUNS/$NAME" > "$RUNS/$NAME.log" 2>&1 < /dev/null &
  echo $! > "$RUNS/$NAME.pid"
  say "byog run started (pid $(cat "$RUNS/$NAME.pid"))"
  sleep 5; poll "$max"
}

cmd=${1:?go MAX_S | poll MAX_S [stop] | pack}; shift
case "$cmd" in
  go) go "$@" ;;
  poll) cd /tmp/repo 2>/dev/null; poll "$@" ;;
  pack) pack ;;
  *) echo "unknown: $cmd"; exit 2 ;;
esac
