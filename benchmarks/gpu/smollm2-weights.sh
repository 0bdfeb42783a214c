#!/usr/bin/env bash
# SmolLM2-135M-Instruct's real weights for the lent H200, which has no registry: the embedded
# default's GGUF as converted by byog (float32, ~/.cache/byog/models), cast to bf16 safetensors
# (~270 MB), packed with xz (~145 MB; the device has no zstd) and cut by split-parts.sh into
# per-call pieces (prefix sm). There, `place` joins them, checks the sha256 and unpacks.
#
#   HERE:  benchmarks/gpu/smollm2-weights.sh pack STAGE      -> STAGE/cNN/sm.NN (+ sm.sha256)
#   THERE: benchmarks/gpu/smollm2-weights.sh place STAGE     -> /tmp/models/smollm2-bf16
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
case "${1:-}" in
  pack)
    stage=${2:?usage: smollm2-weights.sh pack STAGE}
    work=${BYOG_GPU_WORK:-/tmp/byog-smollm2}; rm -rf "$work"; mkdir -p "$work/smollm2-bf16"
    src=$(python3 -c "from byog.images.models import prepare_builtin_smollm2; print(prepare_builtin_smollm2())")
    python3 - "$src" "$work/smollm2-bf16" <<'PY'
import json, shutil, sys
from pathlib import Path
import torch
from safetensors.torch import load_file, save_file
src, dst = Path(sys.argv[1]), Path(sys.argv[2])
weights = load_file(str(src / "model.safetensors"))
save_file({k: v.to(torch.bfloat16).contiguous() for k, v in weights.items()}, str(dst / "model.safetensors"), metadata={"format": "pt"})
config = json.loads((src / "config.json").read_text())
config["dtype"] = "bfloat16"
(dst / "config.json").write_text(json.dumps(config, indent=2))
for name in ("chat_template.jinja", "generation_config.json", "tokenizer.json", "tokenizer_config.json"):
    shutil.copy(src / name, dst / name)
PY
    sha256sum "$work/smollm2-bf16/model.safetensors"
    tar -C "$work" -cf - smollm2-bf16 | xz -6 -T1 > "$work/smollm2-bf16.tar.xz"
    "$here/split-parts.sh" "$stage" sm="$work/smollm2-bf16.tar.xz" ;;
  place)
    stage=${2:?usage: smollm2-weights.sh place STAGE}
    mkdir -p /tmp/stage-sm && cp "$stage"/c*/sm.* /tmp/stage-sm/ 2>/dev/null || true
    cp "$stage"/c*/sm.sha256 /tmp/ 2>/dev/null || true
    if [ -f /tmp/sm.sha256 ] && [ ! -f /tmp/models/smollm2-bf16/.ok ]; then
      if [ "$(cat /tmp/stage-sm/sm.[0-9]* | sha256sum | cut -c1-64)" = "$(cut -c1-64 /tmp/sm.sha256)" ]; then
        mkdir -p /tmp/models && cat /tmp/stage-sm/sm.[0-9]* | xz -dc | tar -xf - -C /tmp/models \
          && touch /tmp/models/smollm2-bf16/.ok && sha256sum /tmp/models/smollm2-bf16/model.safetensors
      else echo "weight pieces so far do not match sm.sha256"; fi
    fi
    echo "weight pieces: $(ls /tmp/stage-sm | grep -c '^sm\.[0-9]')" ;;
  *) sed -n '2,10p' "$0"; exit 2 ;;
esac
