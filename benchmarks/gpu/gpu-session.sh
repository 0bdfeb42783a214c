#!/usr/bin/env bash
# One lent-GPU session (H100 or H200) for issues 58 (A/A coverage), 57 (wake integrity, interleaved vs sequential)
# and 49 (time to a verdict), run ON the device from the repository root. Staging: here,
# `benchmarks/gpu/gpu-session.sh blob STAGE` packs the CUDA vLLM payload, the extra wheels and
# SmolLM2's bf16 weights into one tar cut in 48 MiB pieces STAGE/bNN; each call carries one
# (`carry [".stage/bNN"]`) and runs `gpu-session.sh place`; the last one runs `setup` then `all`.
# The extra wheels (WHEELS, default /tmp/slimwh) serve bench and wake arms; the `points` arm runs evals and
# needs lm-eval too: WHEELS= a folder of ../shared/gpu/build-wheelhouse's wheels (~100 MB more, 9 pieces).
#
#   gpu-session.sh place            copy this call's piece to /tmp/blob
#   gpu-session.sh setup            join, check sha256, unpack vLLM, wheels and weights
#   gpu-session.sh all SECONDS      in the background until SECONDS from now: A/A batch 1, the wake
#                                    probes on two of its servers, more A/A batches, then the study
#                                    (ABBA, sequential with 2 launches, BAAB) while time remains
#   gpu-session.sh studies SECONDS [ARM ...]
#                                   in the background until SECONDS from now, the arms in order (each
#                                    benchmarks/gpu/study-ARM.yaml, or l2): by default the study of issue 57
#                                    item 4 (abba, seq1 = sequential with 1 launch, l2 = a level-2 sleep of a
#                                    fresh server woken by vLLM's documented route, baab, seq = sequential
#                                    with 2 launches); `points` is issue 49's operating-point evals
#   gpu-session.sh poll | pack      log tail | $OUT/h200-session.tar.xz
#   gpu-session.sh snap             while a job runs: $OUT/snap.tar.xz, its records so far (no logs, no bundles)
#
# A/A (issue 58): K identical servers (stock: torch.compile + CUDA graphs, sleep mode on, as the
# interleaved runs use) start together and `byog run` measures each in turn as an endpoint while
# the others idle, so one batch yields K launches for one start-up wait. Concurrent starts are safe
# because --kv-cache-memory-bytes skips vLLM's free-memory profiling (which asserts that no other
# process frees memory meanwhile); each slot has its own compile cache.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
export VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 VLLM_USE_FLASHINFER_SAMPLER=0 TVM_FFI_DISABLE_TORCH_C_DLPACK=1
export PYTHONPATH=/tmp/site:/tmp/site2:$PWD
ROOT=/tmp/runs/h200-session; LOG=/tmp/h200-session.log; K=${AA_SLOTS:-16}
MODEL=/tmp/models/smollm2-bf16; NAME=smollm2-135m-instruct

healthy() { PYTHONPATH= python3 -c "import urllib.request,sys;urllib.request.urlopen('http://127.0.0.1:$1/health',timeout=2)" 2>/dev/null; }
aa_start() {  # $1 batch: start K servers together, wait for every /health (or its death)
  mkdir -p "$ROOT/aa-logs"
  for i in $(seq 1 "$K"); do
    VLLM_SERVER_DEV_MODE=1 VLLM_CACHE_ROOT=/tmp/vc/$i setsid python3 -m vllm.entrypoints.openai.api_server \
      --model $MODEL --served-model-name $NAME --dtype bfloat16 --host 127.0.0.1 --port $((8100 + i)) \
      --max-model-len 1024 --max-num-seqs 16 --gpu-memory-utilization 0.03 --kv-cache-memory-bytes 1073741824 \
      --enable-sleep-mode > "$ROOT/aa-logs/b$1-s$i.log" 2>&1 < /dev/null &
    echo $! > /tmp/aa-s$i.pid; sleep 1
  done
  local t0; t0=$(date +%s)
  while [ $(( $(date +%s) - t0 )) -lt 420 ]; do
    local up=0 dead=0
    for i in $(seq 1 "$K"); do
      if healthy $((8100 + i)); then up=$((up + 1));
      elif ! kill -0 "$(cat /tmp/aa-s$i.pid)" 2>/dev/null; then dead=$((dead + 1)); fi
    done
    [ $((up + dead)) -ge "$K" ] && break; sleep 3
  done
  echo "aa batch $1: $up up, $dead dead after $(( $(date +%s) - t0 )) s"
}
aa_measure() {  # $1 batch: one byog run over the healthy endpoints
  local plan=/tmp/aa-b$1.yaml slots=()
  for i in $(seq 1 "$K"); do healthy $((8100 + i)) && slots+=("$i"); done
  [ ${#slots[@]} -ge 2 ] || { echo "aa batch $1: fewer than 2 servers up"; return 1; }
  { echo "name: h200-aa-b$1"; echo "description: A/A on the H200, identical servers started together, each measured in turn"
    echo "model: {path: $MODEL, served_name: $NAME, tokenizer: $MODEL}"; echo "servers:"
    for i in "${slots[@]}"; do echo "  s$(printf %02d "$i"): {runtime: endpoint, url: \"http://127.0.0.1:$((8100 + i))\"}"; done
    echo "baseline: s$(printf %02d "${slots[0]}")"; echo "workloads:"
    echo "  - {kind: batch, name: decode, isl: [128], osl: [128], batch_sizes: [1, 8], warmup_waves: 1, waves: 3, api: completions, prompts: {kind: random}, reset_prefix_cache: false}"
    echo "seeds: [1234]"; } > "$plan"
  python3 -m byog run "$plan" --run-dir "$ROOT/aa/b$1"; echo "aa batch $1 measured rc=$? at $(date +%T)"
}
aa_stop() { for i in $(seq 1 "$K"); do kill -- -"$(cat /tmp/aa-s$i.pid)" 2>/dev/null; done; sleep 5; pkill -f 'vllm.entrypoints' ; sleep 3; }
left() { echo $(( END - $(date +%s) )); }
l2_fresh() {  # one fresh server: level-2 sleeps woken with reload_weights must serve its pre-sleep outputs
  K=1 aa_start l2
  python3 benchmarks/gpu/wake_probe.py --url http://127.0.0.1:8101 --swaps 2 --level 2 --out "$ROOT/wake-l2-fresh.json"
  echo "wake l2 fresh rc=$?"; K=1 aa_stop
}
study() {  # $1 abba|baab|seq|seq1
  python3 -m byog run benchmarks/gpu/study-$1.yaml --run-dir "$ROOT/study-$1"; echo "study $1 rc=$? at $(date +%T)"
  nvidia-smi --query-gpu=memory.used --format=csv,noheader
}

case "${1:-}" in
  blob)
    stage=${2:?usage: gpu-session.sh blob STAGE}; w=/tmp/h200-blob; rm -rf "$w"; mkdir -p "$w/in"
    cp "${PAYLOAD:-/tmp/byog-gpu-payload/payload.tar.xz}" "$w/in/payload.tar.xz"
    cp /tmp/byog-smollm2/smollm2-bf16.tar.xz "$w/in/"; mkdir -p "$w/in/wheels"; cp "${WHEELS:-/tmp/slimwh}"/*.whl "$w/in/wheels/"
    tar -C "$w/in" -cf "$w/blob.tar" . && sha256sum "$w/blob.tar" | cut -c1-64 > "$w/blob.sha256"
    (cd "$w" && split -b 52M -d blob.tar blob.)
    n=0; for p in "$w"/blob.[0-9]*; do n=$((n + 1)); d=$(printf '%s/b%02d' "$stage" $n); rm -rf "$d"; mkdir -p "$d"; mv "$p" "$d/"; done
    cp "$w/blob.sha256" "$d/"; ls -la "$stage"/b*; echo "$n pieces" ;;
  place)
    mkdir -p /tmp/blob; cp .stage/b*/blob.* /tmp/blob/ 2>/dev/null; ls -la /tmp/blob ;;
  setup)
    t0=$(date +%s)
    [ "$(cat /tmp/blob/blob.[0-9]* | sha256sum | cut -c1-64)" = "$(cat /tmp/blob/blob.sha256)" ] || { echo "blob pieces do not match"; ls -la /tmp/blob; exit 1; }
    mkdir -p /tmp/unb /tmp/site /tmp/models && cat /tmp/blob/blob.[0-9]* | tar -xf - -C /tmp/unb && rm -rf /tmp/blob
    xz -dc -T0 /tmp/unb/payload.tar.xz | tar -xf - -C /tmp/site && touch /tmp/site/.ok
    xz -dc -T0 /tmp/unb/smollm2-bf16.tar.xz | tar -xf - -C /tmp/models
    PYTHONPATH=/tmp/site python3 - > /tmp/missing.txt <<'PY'
import importlib.metadata as md, pathlib
for w in sorted(pathlib.Path("/tmp/unb/wheels").glob("*.whl")):
    try:
        md.version(w.name.split("-")[0].replace("_", "-"))
    except md.PackageNotFoundError:
        print(w)
PY
    [ -s /tmp/missing.txt ] && python3 -m pip install -q --no-deps --no-index --target /tmp/site2 $(cat /tmp/missing.txt) 2>&1 | tail -2
    python3 -m compileall -q -j 16 /tmp/site/vllm > /dev/null 2>&1
    python3 -c "import vllm, scipy, matplotlib, rfc8785, pynvml, byog; print('imports ok: vllm', vllm.__version__)" || exit 1
    nvidia-smi --query-gpu=name,memory.used,memory.total,driver_version --format=csv
    echo "setup in $(( $(date +%s) - t0 )) s" ;;
  all)
    mkdir -p "$ROOT"; setsid nohup bash "$0" _all "$(( $(date +%s) + ${2:?seconds} ))" > "$LOG" 2>&1 < /dev/null &
    echo "started; poll: gpu-session.sh poll" ;;
  _all)
    END=$2; echo "start $(date +%T), budget $(left) s"
    aa_start 1; aa_measure 1
    u1=http://127.0.0.1:8101; u2=http://127.0.0.1:8102
    python3 benchmarks/gpu/wake_probe.py --url $u1 --url $u2 --swaps 12 --out "$ROOT/wake-l1.json"; echo "wake l1 rc=$?"
    python3 benchmarks/gpu/wake_probe.py --url $u1 --url $u2 --swaps 4 --batch 8 --out "$ROOT/wake-l1-b8.json"; echo "wake l1 b8 rc=$?"
    python3 benchmarks/gpu/wake_probe.py --url $u2 --swaps 1 --level 2 --bare-level2-wake --out "$ROOT/wake-l2-bare.json"; echo "wake l2 bare rc=$?"
    python3 benchmarks/gpu/wake_probe.py --url $u2 --swaps 2 --level 2 --out "$ROOT/wake-l2.json"; echo "wake l2 rc=$?"
    aa_stop
    b=2
    while [ "$(left)" -gt 270 ]; do aa_start $b; aa_measure $b; aa_stop; b=$((b + 1)); done
    [ "$(left)" -gt 200 ] && study abba
    [ "$(left)" -gt 330 ] && study seq
    [ "$(left)" -gt 200 ] && study baab
    echo "DONE $(date +%T)" ;;
  studies)
    mkdir -p "$ROOT"; secs=${2:?seconds}; shift 2
    setsid nohup bash "$0" _studies "$(( $(date +%s) + secs ))" "$@" > "$LOG" 2>&1 < /dev/null &
    echo "started; poll: gpu-session.sh poll" ;;
  _studies)
    END=$2; shift 2; echo "start $(date +%T), budget $(left) s"
    arms=("$@"); [ ${#arms[@]} -gt 0 ] || arms=(abba seq1 l2 baab seq)
    for arm in "${arms[@]}"; do
      case $arm in  # the seconds an arm needs left to be worth starting
        l2) [ "$(left)" -gt 100 ] && l2_fresh ;;
        seq1) [ "$(left)" -gt 150 ] && study seq1 ;;
        points) [ "$(left)" -gt 180 ] && study points ;;
        seq) [ "$(left)" -gt 250 ] && study seq ;;
        *) [ "$(left)" -gt 200 ] && study "$arm" ;;
      esac
    done
    echo "DONE $(date +%T)" ;;
  poll)
    tail -n "${2:-25}" "$LOG"; grep -q '^DONE' "$LOG" && echo "finished: gpu-session.sh pack" ;;
  snap)
    OUT=${OUT:?OUT: where the tarball goes}; cp "$LOG" "$OUT/session.log" 2>/dev/null
    tar -C /tmp/runs -cJf "$OUT/snap.tar.xz" --exclude=bundle.tar.gz --exclude=server.log --exclude=aa-logs h200-session 2>/dev/null
    ls -l "$OUT" ;;
  pack)
    OUT=${OUT:?OUT: where the tarball goes}
    for f in "$ROOT"/*/servers/*/server.log "$ROOT"/*/*/servers/*/server.log "$ROOT"/aa-logs/*.log; do
      [ -f "$f" ] && tail -200 "$f" > "$f.t" && mv "$f.t" "$f"; done
    rm -f "$ROOT"/*/bundle.tar.gz "$ROOT"/*/*/bundle.tar.gz; cp "$LOG" "$ROOT/session.log"
    tar -C /tmp/runs -cJf "$OUT/h200-session.tar.xz" h200-session && ls -l "$OUT" ;;
  *) sed -n '2,17p' "$0"; exit 2 ;;
esac
