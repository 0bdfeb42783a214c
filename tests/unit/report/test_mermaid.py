"""The Mermaid charts: the summary's own numbers (the ones the PNGs draw), invalid points left out
and named, bundle text that cannot leave its label, and every chart drawn for real by mermaid-cli."""

from __future__ import annotations

import re
from pathlib import Path

from byog.analysis.summary import derive_summary
from byog.core.io import atomic_write_text
from byog.core.paths import RunDir
from byog.report.format import speedup_axis
from byog.report.markdown import render_report
from byog.report.mermaid import charts, numerics_charts, speedup_charts
from tests.support.mermaid import render_markdown_charts
from tests.support.numerics import PLAN as NUMERICS_PLAN
from tests.support.numerics import write_server
from tests.support.report_runs import INVALID_POINT, SPEC
from tests.support.synthetic import make_run_dir

HOSTILE = 'cand"] %%{init: {"theme": "dark"}}%% <b>@octocat</b>'


def _series(block: str, kind: str) -> list[list[float]]:
    return [[float(v) for v in m.split(", ")] for m in re.findall(rf"^    {kind} \[(.*)\]$", block, flags=re.M)]


def test_the_charts_draw_the_summary_numbers_of_valid_points_and_name_the_invalid(invalid_run) -> None:
    _, summary = invalid_run
    blocks = "\n".join(charts(summary)).split("```mermaid")[1:]
    assert len(blocks) == 2  # speed-up per point, decode tok/s against batch
    speedup, tok_s = blocks
    comps = {c.point_id: c for c in summary.bench.comparisons if c.metric == "decode_tok_s"}
    valid = ["decode-b1-isl4-osl8", "decode-b4-isl4-osl8"]  # B=2 is invalid on the candidate
    assert '["B=1", "B=4"]' in speedup
    assert _series(speedup, "bar") == [[float(f"{comps[p].ratio:.4g}") for p in valid]]
    assert _series(speedup, "line") == [
        [float(f"{comps[p].ci_low:.4g}") for p in valid],
        [float(f"{comps[p].ci_high:.4g}") for p in valid],
        [1.0, 1.0],  # no effect
    ]
    assert f"Left out, flagged invalid: {INVALID_POINT}." in speedup
    points = {(p.server, p.batch_size): p for p in summary.bench.points}
    assert _series(tok_s, "bar") == [[float(f"{points[('candidate', b)].metrics.decode_tok_s:.4g}") for b in (1, 4)]]
    assert _series(tok_s, "line") == [[float(f"{points[('baseline', b)].metrics.decode_tok_s:.4g}") for b in (1, 4)]]


def test_bundle_text_stays_inside_its_label(tmp_path: Path) -> None:
    summary = derive_summary(make_run_dir(tmp_path / "run", SPEC))
    for c in summary.bench.comparisons:
        c.candidate = HOSTILE
    for p in summary.bench.points:
        p.server = HOSTILE if p.server == "candidate" else p.server
    text = "\n".join(charts(summary))
    titles = re.findall(r'^    title "(.*)"$', text, flags=re.M)
    assert titles and all('"' not in t and "%%" not in t and "<" not in t and "@" not in t for t in titles)
    assert "%%{" not in text and "<b>" not in text


def _numerics_run(folder: Path) -> RunDir:
    rd = RunDir(folder / "run")
    atomic_write_text(rd.plan_yaml, NUMERICS_PLAN)
    write_server(rd, "stock", "stock", noise=0.01, seed=1)
    write_server(rd, "changed", "stock", noise=0.1, seed=3)
    return rd


def test_mermaid_cli_draws_every_chart_with_its_bars_and_titles(invalid_run, tmp_path: Path) -> None:
    run_dir, summary = invalid_run
    numerics = derive_summary(_numerics_run(tmp_path)).numerics
    markdown = render_report(run_dir, summary) + "\n" + "\n".join(numerics_charts(numerics))
    sources = re.findall(r"```mermaid\n(.*?)```", markdown, flags=re.S)
    assert len(sources) == 3
    drawn = render_markdown_charts(markdown, tmp_path / "drawn")
    assert len(drawn) == len(sources)
    for source, svg in zip(sources, drawn, strict=True):
        title = re.search(r'title "(.*)"', source).group(1)  # type: ignore[union-attr]
        assert title in svg  # the chart parsed and drew its title
        bars = _series(source, "bar")[0]
        plot = re.search(r'<g class="bar-plot-0">(.*?)</g>', svg, flags=re.S)
        assert plot is not None and plot.group(1).count("<rect") == len(bars)  # one bar per value
        assert len(re.findall(r'<g class="line-plot-\d+">', svg)) == len(_series(source, "line"))
    assert "B=2" not in drawn[0]  # the invalid point is not drawn as a result


def _y_axis(block: str) -> tuple[float, float]:
    found = re.search(r'^    y-axis "[^"]*" (\S+) --> (\S+)$', block, flags=re.M)
    assert found is not None
    return float(found.group(1)), float(found.group(2))


def test_the_speed_up_axis_is_drawn_around_the_data_with_the_line_at_one(invalid_run) -> None:
    """1.24x against 1.26x with their CIs must not be one flat band at the top of an axis from 0."""
    _, summary = invalid_run
    block = "\n".join(speedup_charts(summary))
    low, high = _y_axis(block)
    drawn = [v for series in _series(block, "bar") + _series(block, "line") for v in series]
    assert low > 0.5 and low <= min(drawn) and high >= max(drawn)  # around the data, 1.0 included
    assert (high - low) < 2 * (max(drawn) - min(drawn)) + 0.1  # not from 0
    assert (low, high) == speedup_axis(drawn[:-2] + [1.0])  # the PNG's axis function, on the same numbers
    assert _y_axis("\n".join(speedup_charts(summary, report_format=3)))[0] == 0  # format 3 re-renders as it was


def test_speedup_axis_pads_the_span_and_includes_one() -> None:
    assert speedup_axis([1.24, 1.26, 1.22, 1.28]) == (0.97, 1.31)
    assert speedup_axis([1.0]) == (0.98, 1.02)
    assert speedup_axis([0.8, None, 1.03]) == (0.77, 1.06)


def test_mermaid_cli_parses_charts_with_numbers_of_five_digits_and_two_workloads_at_one_batch_size(
    invalid_run, tmp_path: Path
) -> None:
    """Mermaid 11's xychart rejects e-notation (1.46e+04) and draws two bars of one label at one x:
    the charts write plain decimals and give each bar its own label."""
    _, derived = invalid_run
    summary = derived.model_copy(deep=True)
    for p in summary.bench.points:
        p.metrics.decode_tok_s = (p.metrics.decode_tok_s or 1.0) * 1e4 + 0.4
    markdown = "\n".join(charts(summary))
    assert not re.search(r"\de[+-]\d", markdown) and max(max(s) for s in _series(markdown, "bar")) >= 1e4
    valid = ["decode-b1-isl4-osl8", "decode-b4-isl4-osl8"]
    for p in summary.bench.points:
        if p.point_id == valid[1]:  # a second workload at B=1, as spec-decode B=1 beside the decode sweep's
            p.batch_size, p.workload = 1, "spec-decode"
    assert '["B=1 decode", "B=1 spec-decode"]' in "\n".join(speedup_charts(summary))
    for p in summary.bench.points:
        p.workload = "decode"
    numbered = "\n".join(speedup_charts(summary))
    assert '["1. B=1 decode", "2. B=1 decode"]' in numbered  # still one label: numbered
    assert '["B=1", "B=1"]' in "\n".join(speedup_charts(summary, report_format=4))  # format 4 re-renders as it was
    markdown += "\n" + numbered
    sources = re.findall(r"```mermaid\n(.*?)```", markdown, flags=re.S)
    drawn = render_markdown_charts(markdown, tmp_path / "drawn")
    assert len(drawn) == len(sources) == 3
    for source, svg in zip(sources, drawn, strict=True):
        assert re.search(r'title "(.*)"', source).group(1) in svg  # type: ignore[union-attr]
    assert drawn[2].count(">1. B=1 decode<") == 1 and drawn[2].count(">2. B=1 decode<") == 1
