"""What hardware an env.json describes, in one line, and whether two of them are the same kind.

Pure functions of env.json records (``byog.images.fingerprint`` writes them; older and newer
fingerprints differ in shape, so every field is optional). "The same kind" is what decides
whether absolute numbers of two runs can be compared: the same accelerator model and count,
or, with no accelerator on either side, the same CPU model and core count.
"""

from __future__ import annotations

from collections import Counter

from byog.schemas.env import CpuRecord, EnvRecord, GpuRecord


def _gpus(env: EnvRecord) -> list[GpuRecord]:
    return [*(env.gpu.gpus if env.gpu else []), *env.gpus]


def _cpu(env: EnvRecord) -> tuple[str, int | None]:
    if isinstance(env.cpu, CpuRecord):
        return str(env.cpu.model or "unknown CPU"), env.cpu.logical_cores
    return (env.cpu or "unknown CPU"), env.cpu_count


def accelerators(env: EnvRecord) -> Counter[str]:
    """GPU model name -> count."""
    return Counter(card.name or "unknown GPU" for card in _gpus(env))


def describe(env: EnvRecord) -> str:
    """'8 × NVIDIA H200 (139.8 GiB), driver 570.124.06' or 'AMD EPYC, 2 cores, no GPU'."""
    cards = accelerators(env)
    if cards:
        memory = {card.name: card.memory_total_bytes for card in _gpus(env)}
        parts = []
        for name, count in sorted(cards.items()):
            size = memory.get(name)
            mem = f" ({size / 2**30:.1f} GiB)" if size else ""
            parts.append(f"{count} × {name}{mem}")
        driver = f", driver {env.gpu.driver_version}" if env.gpu and env.gpu.driver_version else ""
        return " + ".join(parts) + driver
    model, cores = _cpu(env)
    return f"{model}, {cores} cores, no GPU" if cores else f"{model}, no GPU"


def same_kind(a: EnvRecord, b: EnvRecord) -> bool:
    """Same accelerators (model and count); with none on either side, the same CPU and core count."""
    cards_a, cards_b = accelerators(a), accelerators(b)
    if cards_a or cards_b:
        return cards_a == cards_b
    return _cpu(a) == _cpu(b)
