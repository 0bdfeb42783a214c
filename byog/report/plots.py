"""The report's PNGs, drawn with matplotlib's Agg backend (imported lazily: it is heavy).

Plots are hashed in the bundle, not re-rendered by verify (PNG bytes depend on the matplotlib
build); report.md links them by relative path. ``plots_for`` (pure, no matplotlib) says which
plots a summary has data for: report.md links exactly those and ``write_plots`` draws exactly
those. Invalid points are drawn as red crosses (lines and speed-ups) and hatched red boxes
(distributions), never as ordinary markers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from byog.analysis.metrics import tpot_s
from byog.core.paths import RunDir
from byog.report.agentic import write_frontier_plots
from byog.report.format import load_label, metric, server_records, speedup_axis
from byog.report.numerics import plot_numerics
from byog.schemas.bench import PointSummary, read_request_rows
from byog.schemas.summary import Summary

INVALID_COLOR = "tab:red"


ONE_CI_FORMAT = 6  # the first report format whose eval-delta plot draws the verdict's 90% CI, and says so


@dataclass(frozen=True)
class Plot:
    name: str
    alt: str
    alt_before: str | None = None  # its alt text in reports older than ONE_CI_FORMAT (they re-render with it)

    def alt_in(self, report_format: int) -> str:
        return self.alt_before if self.alt_before is not None and report_format < ONE_CI_FORMAT else self.alt


TOK_S_VS_BATCH = Plot("tok_s_vs_batch.png", "decode tok/s against batch size, per server")
SPEEDUP = Plot("speedup.png", "decode tok/s speed-up per point with its 95% CI")
TPOT_DISTRIBUTION = Plot("tpot_distribution.png", "TPOT per request, per point")
EVAL_DELTAS = Plot(
    "eval_deltas.png",
    "eval score deltas with the 90% CI the equivalence test (TOST) holds against the ±margin",
    alt_before="eval score deltas with their 95% CI and the margin",
)
PLOTS = tuple(p.name for p in (TOK_S_VS_BATCH, SPEEDUP, TPOT_DISTRIBUTION, EVAL_DELTAS))


def plots_for(summary: Summary) -> list[Plot]:
    """The plots this summary has data for, in report order."""
    points = summary.bench.points
    out = []
    if any(p.batch_size and metric(p, "decode_tok_s") is not None for p in points):
        out.append(TOK_S_VS_BATCH)
    if any(c.metric == "decode_tok_s" for c in summary.bench.comparisons):
        out.append(SPEEDUP)
    if any(metric(p, "tpot_s.p50") is not None for p in points):
        out.append(TPOT_DISTRIBUTION)
    if any(v.d is not None for v in summary.evals.verdicts):
        out.append(EVAL_DELTAS)
    return out


def _tpot_samples(run_dir: RunDir, server: str, point_id: str) -> list[float]:
    path = run_dir.bench_rows(server, point_id)
    if not path.is_file():
        return []
    return [x * 1e3 for x in (tpot_s(r) for r in read_request_rows(path) if not r.warmup) if x is not None]


def _pair_valid(valid: dict[tuple[str, str], bool], c: Any) -> bool:
    return valid.get((c.candidate, c.point_id), False) and valid.get((c.baseline, c.point_id), False)


def _mark_invalid(ax: Any, xs: list[Any], ys: list[Any]) -> None:
    ax.plot(xs, ys, linestyle="none", marker="X", markersize=11, color=INVALID_COLOR, markeredgecolor="black")


def _draw_tok_s_vs_batch(ax: Any, points: list[PointSummary], tp: dict[str, int]) -> None:
    flagged = False
    for server in sorted({p.server for p in points}):
        mine = sorted(
            (p.batch_size, metric(p, "decode_tok_s"), p.valid)
            for p in points
            if p.server == server and p.batch_size and metric(p, "decode_tok_s") is not None
        )
        if not mine:
            continue
        ax.plot([b for b, _, _ in mine], [v for _, v, _ in mine], marker="o", label=f"{server} (TP{tp.get(server, 1)})")
        bad = [(b, v) for b, v, ok in mine if not ok]
        if bad:
            flagged = True
            _mark_invalid(ax, [b for b, _ in bad], [v for _, v in bad])
    if flagged:  # a legend entry for the red crosses
        ax.plot(
            [], [], linestyle="none", marker="X", color=INVALID_COLOR, markeredgecolor="black", label="invalid point"
        )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch size B")
    ax.set_ylabel("aggregate decode tok/s")
    ax.set_title("Decode throughput vs batch")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)


def _draw_speedup(ax: Any, summary: Summary, valid: dict[tuple[str, str], bool]) -> None:
    comps = [c for c in summary.bench.comparisons if c.metric == "decode_tok_s"]
    flagged = False
    for i, c in enumerate(comps):
        ok = _pair_valid(valid, c)
        low, high = c.ci_low, c.ci_high
        err = [[c.ratio - low], [high - c.ratio]] if low is not None and high is not None else None
        color = "tab:blue" if ok else INVALID_COLOR
        ax.errorbar(
            [i], [c.ratio], yerr=err, fmt="o" if ok else "X", markersize=6 if ok else 10, capsize=4, color=color
        )
        flagged = flagged or not ok
    ax.axhline(1.0, color="grey", linestyle="--", linewidth=1)
    ax.set_ylim(*speedup_axis(v for c in comps for v in (c.ratio, c.ci_low, c.ci_high)))  # the Mermaid chart's axis
    labels = [f"{c.candidate}\n{c.point_id}" + ("" if _pair_valid(valid, c) else "\n(invalid)") for c in comps]
    ax.set_xticks(range(len(comps)), labels, rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("decode tok/s speed-up (95% CI)")
    ax.set_title("Candidate / baseline per point" + (" (red X: invalid, not a result)" if flagged else ""))


def _hatch_invalid_box(boxes: dict[str, Any], i: int) -> None:
    box = boxes["boxes"][i]
    box.set_edgecolor(INVALID_COLOR)
    box.set_linewidth(2)
    box.set_hatch("//")
    for part in (*boxes["whiskers"][2 * i : 2 * i + 2], *boxes["caps"][2 * i : 2 * i + 2], boxes["medians"][i]):
        part.set_color(INVALID_COLOR)
        part.set_linewidth(2)


def _draw_tpot_distribution(ax: Any, run_dir: RunDir, points: list[PointSummary]) -> None:
    samples, labels, oks = [], [], []
    for p in points:
        values = _tpot_samples(run_dir, p.server, p.point_id)
        if values:
            samples.append(values)
            labels.append(f"{p.server}\n{load_label(p)}" + ("" if p.valid else "\n(invalid)"))
            oks.append(p.valid)
    if samples:
        boxes = ax.boxplot(samples, showfliers=False, patch_artist=True)
        for i, (box, ok) in enumerate(zip(boxes["boxes"], oks, strict=True)):
            box.set_facecolor("white" if ok else "mistyrose")
            if not ok:
                _hatch_invalid_box(boxes, i)
        ax.set_xticks(range(1, len(labels) + 1), labels, rotation=30, ha="right", fontsize=7)
        for tick, ok in zip(ax.get_xticklabels(), oks, strict=True):
            tick.set_color("black" if ok else INVALID_COLOR)
    ax.set_ylabel("TPOT per request (ms)")
    ax.set_title("TPOT distribution" + ("" if all(oks) else " (hatched red: invalid point)"))


def _draw_eval_deltas(ax: Any, summary: Summary) -> None:
    verdicts = summary.evals.verdicts
    for i, v in enumerate(verdicts):
        if v.d is None:
            continue
        low, high = v.ci90_low, v.ci90_high  # the verdict's: equivalent when it lies inside ±margin
        err = [[v.d - low], [high - v.d]] if low is not None and high is not None else None
        ax.errorbar([i], [v.d], yerr=err, fmt="o", capsize=4)
        ax.hlines([-v.margin, v.margin], i - 0.3, i + 0.3, colors="tab:red", linestyles="dotted")
    ax.axhline(0.0, color="grey", linewidth=1)
    ax.set_xticks(range(len(verdicts)), [f"{v.task}\n{v.candidate}" for v in verdicts], fontsize=8)
    ax.set_ylabel("score delta d, points (90% CI, TOST; dotted: ±margin)")
    ax.set_title("Eval deltas, candidate − baseline")


def write_plots(run_dir: RunDir, summary: Summary, out_dir: Path | None = None) -> list[Path]:
    """The plots of ``plots_for(summary)`` under ``out_dir`` (default: the run directory's plots/),
    a frontier PNG per candidate/baseline pair with a sweep, and the numerics one; stale plots of
    byog's own names that no longer apply are removed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = out_dir or run_dir.plots_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    wanted = plots_for(summary)
    for name in set(PLOTS) - {p.name for p in wanted}:
        (out_dir / name).unlink(missing_ok=True)
    points = summary.bench.points
    valid = {(p.server, p.point_id): p.valid for p in points}
    tp = {r.name: r.tensor_parallel_size or 1 for r in server_records(run_dir)}
    written = []

    def save(fig: Any, plot: Plot) -> None:
        fig.tight_layout()
        path = out_dir / plot.name
        fig.savefig(path, dpi=110, metadata={"Software": None})
        plt.close(fig)
        written.append(path)

    drawers: list[tuple[Plot, tuple[float, float], Any]] = [
        (TOK_S_VS_BATCH, (6, 4), lambda ax: _draw_tok_s_vs_batch(ax, points, tp)),
        (SPEEDUP, (7, 4), lambda ax: _draw_speedup(ax, summary, valid)),
        (TPOT_DISTRIBUTION, (7, 4), lambda ax: _draw_tpot_distribution(ax, run_dir, points)),
        (EVAL_DELTAS, (6, 4), lambda ax: _draw_eval_deltas(ax, summary)),
    ]
    for plot, size, draw in drawers:
        if plot in wanted:
            fig, ax = plt.subplots(figsize=size)
            draw(ax)
            save(fig, plot)
    written += write_frontier_plots(run_dir, summary, out_dir)
    if summary.numerics is not None:  # numerics_divergence.png, when a comparison ran
        plot_numerics(
            run_dir,
            summary.numerics,
            lambda fig, name: save(fig, Plot(name, "per-position divergence vs the A/A envelope")),
        )
    return written
