#!/usr/bin/env bash
# ON the H200 pair (nvidia-h200-x2), from the checkout root: TP2 on one node against TP2 across
# two nodes of one GPU each (CUDA_VISIBLE_DEVICES 0 and 1), with vLLM's native launcher and with
# Ray, every server launched, watched and stopped by byog; TPOT for B = 1..64 side by side.
#
#   benchmarks/gpu/multinode.sh setup    # unpack the vLLM payload + wheelhouse (device-setup), install Ray
#   benchmarks/gpu/multinode.sh start    # the bench in the background (outlives the call while the machine is warm)
#   benchmarks/gpu/multinode.sh status   # progress, the results so far as $OUT/multinode.tar.gz, the table once done
#
# byog's bench needs nothing beyond the vLLM payload, Ray and the machine's image (no wheelhouse:
# no lm-eval, scipy or matplotlib). The exact sequence (kind nvidia-h200-x2; issue the device
# calls back to back: an idle machine is given back after ~30 s and /tmp goes with it):
#   here:   /work/shared/gpu/build-payload .stage 40           # the team's GPU routine: vLLM 0.24 payload
#           benchmarks/gpu/build-ray-parts.sh .stage/ray 30 && cat .stage/ray/r*/rpart.* > .stage/ray.tar
#           benchmarks/gpu/split-parts.sh .stage pp=<(cat .stage/p*/part.*) rr=.stage/ray.tar
#           cp -r /work/shared/gpu .stage/gpu                  # model configs + tokenizer
#   device: bash benchmarks/gpu/place-parts.sh                  # once per folder, carry [".stage/cNN"]
#           bash benchmarks/gpu/multinode.sh setup              # carry [".stage/gpu"]
#           bash benchmarks/gpu/multinode.sh start
#           bash benchmarks/gpu/multinode.sh status             # poll until the table prints (~8-10 min)
#   here:   mkdir -p benchmarks/results/multinode-h200 && tar -xzf FILES_AT/multinode.tar.gz -C benchmarks/results/multinode-h200
#           python benchmarks/multinode_table.py benchmarks/results/multinode-h200/multinode.json
# Env: MODEL (/tmp/models/llama3-8b-shape), BATCH (1,2,4,8,16,32,64), ISL (512), OSL (256),
# CONFIGS (single,native,ray), ARGS (extra vllm serve args; default dummy weights, 0.85 memory).
set -u
cd "$(dirname "$0")/../.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export VLLM_USE_FLASHINFER_SAMPLER=0 TVM_FFI_DISABLE_TORCH_C_DLPACK=1 PYTHONUNBUFFERED=1
export VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 RAY_USAGE_STATS_ENABLED=0
export PYTHONPATH=/tmp/site:/tmp/site2:/tmp/site-ray:/tmp/repo-mn  # a copy: the carried tree changes between calls
results=/tmp/mn-results; log=/tmp/mn-bench.log
case "${1:-}" in
  setup)
    t0=$(date +%s)
    if [ ! -f /tmp/site/.ok ]; then
      mkdir -p /tmp/site && cat /tmp/stage/p*/part.* | xz -dc -T0 | tar -xf - -C /tmp/site && touch /tmp/site/.ok \
        || { echo "vLLM payload unpack failed: are all parts in /tmp/stage?"; ls -R /tmp/stage; exit 1; }
    fi
    if [ ! -f /tmp/site-ray/.ok ]; then
      cat /tmp/stage-ray/r*/rpart.* > /tmp/ray.tar && mkdir -p /tmp/ray-wheels && tar -xf /tmp/ray.tar -C /tmp/ray-wheels \
        && python3 -m pip install -q --no-deps --no-index --target /tmp/site-ray /tmp/ray-wheels/*.whl && touch /tmp/site-ray/.ok \
        || { echo "ray install failed: are all parts in /tmp/stage-ray?"; sha256sum /tmp/ray.tar; exit 1; }
    fi
    m=${MODEL:-/tmp/models/llama3-8b-shape}
    mkdir -p "$m" && cp .stage/gpu/models/"$(basename "$m")"/* .stage/gpu/models/tokenizer/* "$m"/
    PYTHONPATH=$PYTHONPATH:$PWD python3 -c "import ray, vllm, byog.runtimes.cluster, byog.bench.sweep; print('ray', ray.__version__, 'vllm', vllm.__version__)" || exit 1
    nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader
    echo "setup done in $(( $(date +%s) - t0 )) s" ;;
  start)
    rm -rf "$results" /tmp/repo-mn; mkdir -p "$results" /tmp/repo-mn && cp -r byog benchmarks pyproject.toml /tmp/repo-mn/
    setsid nohup python3 /tmp/repo-mn/benchmarks/multinode_bench.py --model "${MODEL:-/tmp/models/llama3-8b-shape}" --out "$results" \
      --configs "${CONFIGS:-single,native,ray}" --batch "${BATCH:-1,2,4,8,16,32,64}" --isl "${ISL:-512}" --osl "${OSL:-256}" \
      --args "${ARGS:---load-format dummy --gpu-memory-utilization 0.85}" --ray-args "${RAY_ARGS:---object-store-memory 4000000000}" \
      > "$log" 2>&1 < /dev/null &
    echo "started (pid $!); log $log" ;;
  status)
    tail -n 25 "$log"
    ls "$results"/runs/servers 2>/dev/null
    # one archive of whatever exists so far (a call returns at most 8 files; the machine may be
    # given back before the next poll, so every poll brings the partial results home)
    find "$results" -name '*.log' -size +2M -exec truncate -s 2M {} +
    mkdir -p "${OUT:-/tmp/out}" && cp "$log" "$results/" 2>/dev/null
    tar -czf "${OUT:-/tmp/out}/multinode.tar.gz" -C "$results" . && du -h "${OUT:-/tmp/out}/multinode.tar.gz"
    [ -f "$results/multinode.json" ] && python3 /tmp/repo-mn/benchmarks/multinode_table.py "$results/multinode.json"
    nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader ;;
  *) echo "usage: $0 setup|start|status"; exit 2 ;;
esac
