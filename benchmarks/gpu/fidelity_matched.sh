#!/usr/bin/env bash
# ON the lent H200 (one GPU of it), from a copy of the checkout: issue 19's matched table, byog's
# closed loop against `vllm bench serve` at C = 1, 8, 32, 64 and ISL 1024, 8192 (OSL 256, greedy),
# each cell byog, vLLM, vLLM, byog, a warm-up per ISL, prefix cache off.
#
#   benchmarks/gpu/fidelity_matched.sh go       # device-setup, the MoE server, the table in the background
#   benchmarks/gpu/fidelity_matched.sh status   # progress; once done, the raw files under $OUT/fidelity-matched
#
# Before `go`: the vLLM payload parts in /tmp/stage/pNN, the wheel parts' files in /tmp/wh and the
# team's gpu folder carried as .stage/gpu (the team's GPU staging routine). Env: GPU (0), ISLS
# ("1024 8192"), LEVELS (1,8,32,64), MAX_PROMPTS (128); HYPOTHESES (e.g. vllm-body,vllm-prompts):
# after the table, those experiments of fidelity_experiments.py at HYPOTHESIS_ISL (8192) and
# HYPOTHESIS_C (8), two repeats alternated, into /tmp/fidelity-matched/hypotheses.
set -u
cd "$(dirname "$0")/../.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export VLLM_USE_FLASHINFER_SAMPLER=0 TVM_FFI_DISABLE_TORCH_C_DLPACK=1 PYTHONUNBUFFERED=1
export VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
results=/tmp/fidelity-matched; log=/tmp/fidelity-matched.log
model=qwen3-moe-30b-a3b-shape
case "${1:-}" in
  go)
    [ -f /tmp/models/$model/config.json ] || .stage/gpu/device-setup .stage/gpu || exit 1
    rm -rf /tmp/repo && mkdir -p /tmp/repo && cp -r byog benchmarks pyproject.toml /tmp/repo/
    rm -rf "$results" /tmp/gpu-scripts; mkdir -p "$results" && cp -r .stage/gpu /tmp/gpu-scripts
    cat > /tmp/fidelity-chain.sh <<CHAIN
set -u
export PYTHONPATH=/tmp/site:/tmp/site2:/tmp/repo CUDA_VISIBLE_DEVICES=${GPU:-0}
t0=\$(date +%s)
MAX_MODEL_LEN=10240 WAIT_S=600 /tmp/gpu-scripts/device-serve /tmp/gpu-scripts/models/$model /tmp/gpu-scripts/models/tokenizer --no-enable-prefix-caching
echo "[chain \$((\$(date +%s)-t0)) s] server rc \$?"
for isl in ${ISLS:-1024 8192}; do
  python3 /tmp/repo/benchmarks/fidelity_experiments.py --base-url http://127.0.0.1:8000 --model $model \
    --tokenizer /tmp/models/$model --out $results --isl \$isl --osl 256 --concurrency ${LEVELS:-1,8,32,64} \
    --prompts-per-c 4 --max-prompts ${MAX_PROMPTS:-128} --experiments matched --repeats 2 --alternate \
    --warmup-prompts 64 --vllm-in-process 2>&1 | grep --line-buffered -E '^(matched|warmup)|Error|error|Traceback'
  echo "[chain \$((\$(date +%s)-t0)) s] ISL \$isl done"
done
if [ -n "${HYPOTHESES:-}" ]; then
  python3 /tmp/repo/benchmarks/fidelity_experiments.py --base-url http://127.0.0.1:8000 --model $model \
    --tokenizer /tmp/models/$model --out $results/hypotheses --isl ${HYPOTHESIS_ISL:-8192} --osl 256 \
    --concurrency ${HYPOTHESIS_C:-8} --experiments ${HYPOTHESES:-} --repeats 2 --alternate --vllm-in-process 2>&1 \
    | grep --line-buffered -E '^[a-z-]+ +(byog|vllm) |Error|error|Traceback'
  python3 /tmp/repo/benchmarks/fidelity_table.py $results/hypotheses > $results/hypotheses/table.md
  echo "[chain \$((\$(date +%s)-t0)) s] hypotheses done"
fi
python3 /tmp/repo/benchmarks/fidelity_table.py $results > $results/table.md
kill \$(cat /tmp/server-8000.pid); echo "[chain \$((\$(date +%s)-t0)) s] done"
CHAIN
    setsid nohup bash /tmp/fidelity-chain.sh > "$log" 2>&1 < /dev/null &
    echo "started (pid $!); log $log" ;;
  status)
    tail -n 30 "$log"
    if grep -q '\] done$' "$log" 2>/dev/null; then  # one archive: a call brings back at most 8 files
      tail -c 2M /tmp/server-8000.log > "$results/server.log.tail"; cp "$log" "$results/chain.log"
      mkdir -p "${OUT:-/tmp/out}" && tar -czf "${OUT:-/tmp/out}/fidelity-matched.tgz" -C /tmp fidelity-matched
      cat "$results/table.md" "$results"/hypotheses/table.md 2>/dev/null
    fi
    nvidia-smi --query-gpu=index,power.draw,clocks_throttle_reasons.active --format=csv,noheader ;;
  *) echo "usage: $0 go|status"; exit 2 ;;
esac
