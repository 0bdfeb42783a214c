"""What hardware an env.json describes, in one line, and whether two of them are the same kind.

Pure functions of env.json documents (``byog.images.fingerprint`` writes them; older and newer
fingerprints differ in shape, so every field is optional). "The same kind" is what decides
whether absolute numbers of two runs can be compared: the same accelerator model and count,
or, with no accelerator on either side, the same CPU model and core count.
"""

from __future__ import annotations

from collections import Counter
from typing import Any


def _gpus(env: dict[str, Any]) -> list[dict[str, Any]]:
    gpu = env.get("gpu") if isinstance(env.get("gpu"), dict) else {}
    cards = [*(gpu.get("gpus") or []), *(env.get("gpus") or [])]
    return [card for card in cards if isinstance(card, dict)]


def _cpu(env: dict[str, Any]) -> tuple[str, int | None]:
    cpu = env.get("cpu")
    if isinstance(cpu, dict):
        cores = cpu.get("logical_cores")
        return str(cpu.get("model") or "unknown CPU"), cores if isinstance(cores, int) else None
    cores = env.get("cpu_count")
    return (str(cpu) if cpu else "unknown CPU"), cores if isinstance(cores, int) else None


def accelerators(env: dict[str, Any]) -> Counter[str]:
    """GPU model name -> count."""
    return Counter(str(card.get("name") or "unknown GPU") for card in _gpus(env))


def describe(env: dict[str, Any]) -> str:
    """'8 × NVIDIA H200 (139.8 GiB), driver 570.124.06' or 'AMD EPYC, 2 cores, no GPU'."""
    cards = accelerators(env)
    if cards:
        memory = {card.get("name"): card.get("memory_total_bytes") for card in _gpus(env)}
        parts = []
        for name, count in sorted(cards.items()):
            size = memory.get(name)
            mem = f" ({size / 2**30:.1f} GiB)" if isinstance(size, (int, float)) and size else ""
            parts.append(f"{count} × {name}{mem}")
        gpu = env.get("gpu") if isinstance(env.get("gpu"), dict) else {}
        driver = f", driver {gpu['driver_version']}" if gpu.get("driver_version") else ""
        return " + ".join(parts) + driver
    model, cores = _cpu(env)
    return f"{model}, {cores} cores, no GPU" if cores else f"{model}, no GPU"


def same_kind(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Same accelerators (model and count); with none on either side, the same CPU and core count."""
    cards_a, cards_b = accelerators(a), accelerators(b)
    if cards_a or cards_b:
        return cards_a == cards_b
    return _cpu(a) == _cpu(b)
