#!/usr/bin/env bash
# The H200 staging in as few calls as a 64 MiB call allows: one uncompressed tar (the "blob") of the
# CUDA vLLM payload (../shared/gpu/build-payload's site.tar.xz), SmolLM2's bf16 weights
# (benchmarks/gpu/smollm2-weights.sh's smollm2-bf16.tar.xz) and the wheelhouse (build-wheelhouse's
# wheels), cut into 48 MiB pieces. With benchmarks/results moved out of the working tree for the
# calls, the checkout that travels with each piece is ~8 MB.
#
#   HERE:  benchmarks/gpu/blob.sh cut SITE_XZ WEIGHTS_XZ WHEEL_DIR STAGE   -> STAGE/b.NN, STAGE/blob.sha256
#   THERE: benchmarks/gpu/blob.sh place            (each call: carry [".stage/b.NN", ...]; the last one unpacks)
#   THERE: benchmarks/gpu/blob.sh runs             numerics (issue 37) then interleave (issue 38), in the background
#                                                  (BLOB_RUNS=interleave: the interleave pair alone)
#   THERE: benchmarks/gpu/blob.sh poll             log tails and a non-destructive archive of both run dirs in $OUT
set -u
case "${1:-}" in
  cut)
    site=${2:?}; weights=${3:?}; wheels=${4:?}; stage=${5:?}
    work=$(mktemp -d); mkdir -p "$work/wh" "$stage"
    cp "$site" "$work/site.tar.xz"; cp "$weights" "$work/smollm2-bf16.tar.xz"; cp "$wheels"/*.whl "$work/wh/"
    tar -C "$work" -cf "$work/blob.tar" site.tar.xz smollm2-bf16.tar.xz wh
    sha256sum "$work/blob.tar" | cut -c1-64 > "$stage/blob.sha256"
    (cd "$stage" && rm -f b.[0-9]* && split -b 48M -d "$work/blob.tar" b.)
    rm -rf "$work"; ls -l "$stage" ;;
  place)
    mkdir -p /tmp/blob && find .stage -name "b.[0-9]*" -exec cp {} /tmp/blob/ \; ; cp .stage/blob.sha256 /tmp/ 2>/dev/null
    echo "blob pieces: $(ls /tmp/blob | wc -l)"
    [ -f /tmp/site/.ok ] && { echo "already placed"; exit 0; }
    [ -f /tmp/blob.sha256 ] || exit 0
    [ "$(cat /tmp/blob/b.* | sha256sum | cut -c1-64)" = "$(cat /tmp/blob.sha256)" ] || { echo "pieces so far do not match blob.sha256"; exit 0; }
    t0=$(date +%s); mkdir -p /tmp/blobx /tmp/site /tmp/models /tmp/wh
    cat /tmp/blob/b.* | tar -xf - -C /tmp/blobx && rm -rf /tmp/blob
    xz -dc -T0 /tmp/blobx/site.tar.xz | tar -xf - -C /tmp/site
    xz -dc -T0 /tmp/blobx/smollm2-bf16.tar.xz | tar -xf - -C /tmp/models
    mv /tmp/blobx/wh/*.whl /tmp/wh/ && rm -rf /tmp/blobx
    export PYTHONPATH=/tmp/site
    missing=$(python3 -c 'import importlib.metadata as md, pathlib
for w in sorted(pathlib.Path("/tmp/wh").glob("*.whl")):
    try: md.version(w.name.split("-")[0].replace("_", "-"))
    except md.PackageNotFoundError: print(w)')
    # shellcheck disable=SC2086
    [ -n "$missing" ] && python3 -m pip install -q --no-deps --no-index --target /tmp/site2 $missing 2>&1 | tail -3
    PYTHONPATH=/tmp/site:/tmp/site2 python3 -c "import vllm, lm_eval, scipy, rfc8785, pynvml; print('imports ok: vllm', vllm.__version__)" \
      && touch /tmp/site/.ok && echo "placed in $(( $(date +%s) - t0 )) s"; sha256sum /tmp/models/smollm2-bf16/model.safetensors ;;
  runs)  # BLOB_RUNS=interleave runs the interleave pair alone
    setsid nohup bash -c '
      if [ "${BLOB_RUNS:-all}" != interleave ]; then
        NUMERICS_PLAN=benchmarks/gpu/numerics-smollm2.yaml NUMERICS_WHAT=numerics benchmarks/gpu/numerics.sh run
        until grep -q "^DONE" /tmp/numerics-smollm2.log 2>/dev/null; do sleep 5; done
      fi
      benchmarks/gpu/interleave.sh run' > /tmp/blob-runs.log 2>&1 < /dev/null &
    echo "started (pid $!)" ;;
  poll)
    for log in /tmp/numerics-smollm2.log /tmp/interleave-smollm2.log; do [ -f "$log" ] && { echo "== $log"; tail -25 "$log"; }; done
    nvidia-smi --query-gpu=memory.used,temperature.gpu,clocks.sm --format=csv,noheader
    OUT=${OUT:?}; cp /tmp/numerics-smollm2.log /tmp/interleave-smollm2.log "$OUT/" 2>/dev/null
    dirs=$(cd /tmp/runs 2>/dev/null && ls -d numerics-smollm2 interleave-smollm2 2>/dev/null)
    [ -n "$dirs" ] && tar -C /tmp/runs --exclude='bundle.tar.gz' --exclude='server.log' -cJf "$OUT/runs-partial.tar.xz" $dirs
    ls -l "$OUT" ;;
  *) sed -n '2,12p' "$0"; exit 2 ;;
esac
