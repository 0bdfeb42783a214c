#!/usr/bin/env bash
# HERE (a machine with PyPI): the Ray wheel vLLM's Ray executor needs, for the H200 machine's
# Python 3.12, split into parts that fit one device call each (a call carries at most 64 MiB).
#
#   benchmarks/gpu/build-ray-parts.sh OUT_DIR [PART_MB]      (default 40)
#
# vLLM 0.24's Ray executor checks `ray >= 2.43.0` and `ray.experimental.compiled_dag_ref` (Ray core
# has it; the cgraph extra only adds cupy, needed only for VLLM_USE_RAY_COMPILED_DAG_CHANNEL_TYPE=nccl).
# Ray's own dependencies that the payload and the image lack: msgpack (click, filelock, jsonschema,
# packaging, protobuf, pyyaml and requests are there). OUT_DIR gets r01/, r02/ and ray.sha256.
set -euo pipefail
out=${1:?usage: build-ray-parts.sh OUT_DIR [PART_MB]}; part_mb=${2:-40}
RAY_VERSION=${RAY_VERSION:-2.60.0}; MSGPACK_VERSION=${MSGPACK_VERSION:-1.2.4}
work=${BYOG_RAY_WORK:-/tmp/byog-ray}
mkdir -p "$work/wheels" "$out"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
  -d "$work/wheels" "ray==$RAY_VERSION" "msgpack==$MSGPACK_VERSION" 2>&1 | grep -v "is ignored" || true
ls "$work"/wheels/ray-"$RAY_VERSION"-cp312-*.whl "$work"/wheels/msgpack-"$MSGPACK_VERSION"-cp312-*.whl >/dev/null
tar -cf "$work/ray.tar" -C "$work/wheels" $(cd "$work/wheels" && ls ray-"$RAY_VERSION"-cp312-*.whl msgpack-"$MSGPACK_VERSION"-cp312-*.whl)
rm -rf "$out"/r[0-9][0-9]
( cd "$work" && rm -f rpart.* && split -b "${part_mb}M" -d ray.tar rpart. )
i=0
for p in "$work"/rpart.*; do i=$((i+1)); d=$(printf '%s/r%02d' "$out" $i); mkdir -p "$d"; mv "$p" "$d/"; done
sha256sum "$work/ray.tar" | cut -d' ' -f1 > "$out/ray.sha256"
echo "ray $RAY_VERSION + msgpack $MSGPACK_VERSION (cp312): $(du -h "$work/ray.tar" | cut -f1) in $i parts under $out"
