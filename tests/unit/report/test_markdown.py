"""report.md's shape: headline first, one matrix per metric (rows B, candidate / baseline / speed-up
with CI), invalid points marked in every table and plot, plot links that resolve, bundle text
that never becomes markdown."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from byog.core.io import atomic_write_json, atomic_write_text
from byog.core.paths import RunDir
from byog.core.safe_text import md_text
from byog.report.context import ReportInputs
from byog.report.markdown import MARKER, render_report
from byog.report.plots import PLOTS, plots_for, write_plots
from byog.schemas.claims import ClaimsFile
from byog.schemas.summary import Summary
from tests.support.report_runs import INVALID_POINT, SPEC, derive
from tests.support.synthetic import make_run_dir


@pytest.fixture(scope="module")
def valid_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunDir, Summary]:
    run_dir = make_run_dir(tmp_path_factory.mktemp("valid") / "run", SPEC)
    return run_dir, derive(run_dir)


def _matrix(text: str, title: str) -> list[list[str]]:
    """The rows (cells) of the first table after a heading that starts with ``title``."""
    block = text.split(f"### {title}", 1)[1].split("\n\n", 2)[1]
    return [
        [cell.strip() for cell in line.strip("|").split(" | ")]
        for line in block.splitlines()
        if not line.startswith("|---")
    ]


def test_the_headline_comes_first_and_the_marker_names_the_format(valid_run: tuple[RunDir, Summary]) -> None:
    run_dir, summary = valid_run
    text = render_report(run_dir, summary)
    assert text.splitlines()[0] == MARKER
    assert re.findall(r"^## (.+)$", text, flags=re.M)[0] == "Headline"
    headline = text.split("## Headline", 1)[1].split("## Performance", 1)[0]
    order = ["- **candidate vs baseline**: ", "**What changed**", "**Accuracy**", "- ❔ gsm8k (candidate vs baseline)"]
    assert [headline.index(part) for part in order] == sorted(headline.index(part) for part in order)
    assert (
        "| decode B=1…4, ISL 4, OSL 8 | decode tok/s | 1." in headline and "not slower at any of 3 points" in headline
    )
    old = render_report(run_dir, summary, report_format=4).split("## Performance", 1)[
        0
    ]  # format 4 re-renders as it was
    assert "accuracy: gsm8k, candidate vs baseline" in old and "All 6 bench points are valid." in old


def test_one_matrix_per_metric_rows_b_cells_candidate_baseline_speedup(valid_run: tuple[RunDir, Summary]) -> None:
    run_dir, summary = valid_run
    text = render_report(run_dir, summary)
    assert re.findall(r"^### (.+)$", text, flags=re.M) == [
        "decode tok/s: candidate vs baseline, decode, ISL 4, OSL 8",
        "TPOT P50 (ms): candidate vs baseline, decode, ISL 4, OSL 8",
        "TTFT P50 (ms): candidate vs baseline, decode, ISL 4, OSL 8",
        "Decode matrices",
        "Energy",
    ]
    rows = _matrix(text, "decode tok/s")
    assert rows[0] == ["B", "candidate", "baseline", "speed-up [95% CI]"]
    assert [r[0] for r in rows[1:]] == ["1", "2", "4"]
    points = {(p.server, p.point_id): p for p in summary.bench.points}
    for row, b in zip(rows[1:], (1, 2, 4), strict=True):
        pid = f"decode-b{b}-isl4-osl8"
        c = next(c for c in summary.bench.comparisons if c.point_id == pid and c.metric == "decode_tok_s")
        assert row[1] == f"{points[('candidate', pid)].metrics.decode_tok_s:.4g}"
        assert row[2] == f"{points[('baseline', pid)].metrics.decode_tok_s:.4g}"
        # one launch per side: the perf label is "screening" (docs/statistics.md §6)
        assert row[3] == f"{c.ratio:.2f}× [{c.ci_low:.2f}, {c.ci_high:.2f}] (screening)"


def test_an_invalid_point_is_struck_through_and_marked_everywhere(invalid_run: tuple[RunDir, Summary]) -> None:
    run_dir, summary = invalid_run
    point = next(p for p in summary.bench.points if (p.server, p.point_id) == ("candidate", INVALID_POINT))
    assert not point.valid and "client saturated" in point.invalid_reasons[0]
    text = render_report(run_dir, summary)
    for title in ("decode tok/s", "TPOT P50 (ms)", "TTFT P50 (ms)"):
        rows = {r[0]: r for r in _matrix(text, title)}
        assert rows["2"][1].startswith("~~") and rows["2"][1].endswith("~~ ⚠ invalid")  # the invalid candidate value
        assert "~~" not in rows["2"][2]  # the baseline of that point is valid
        assert rows["2"][3].startswith("~~") and rows["2"][3].endswith("~~ ⚠ invalid")  # no speed-up reads as a result
        assert all("⚠" not in cell for cell in rows["1"] + rows["4"])
    headline = text.split("## Performance", 1)[0]
    assert "- ⚠ Invalid point, candidate decode B=2, ISL 4: client saturated: " in headline
    assert "remedy: run the bench client on an idle machine" in headline
    assert "- ⚠ Invalid on one side only, candidate vs baseline: decode B=2, ISL 4 (candidate only)" in headline
    assert "slower at any of 2 points" in headline  # the what-changed rows count the valid points only
    invalid = text.split("### ⚠ Invalid points", 1)[1].split("##", 1)[0]
    assert f"- candidate {INVALID_POINT}: client saturated" in invalid.replace("\\", "")


def _red_pixels(png: Path) -> int:
    import matplotlib.image

    pixels = matplotlib.image.imread(str(png))[..., :3]
    r, g, b = (pixels[..., i] * 255 for i in range(3))
    return int(((abs(r - 214) < 20) & (abs(g - 39) < 25) & (abs(b - 40) < 25)).sum())


def test_plots_draw_invalid_points_in_red_and_valid_ones_not(
    valid_run: tuple[RunDir, Summary], invalid_run: tuple[RunDir, Summary], tmp_path: Path
) -> None:
    for (run_dir, summary), name in ((valid_run, "valid"), (invalid_run, "invalid")):
        written = write_plots(run_dir, summary, tmp_path / name)
        assert sorted(p.name for p in written if not p.name.startswith("frontier-")) == sorted(PLOTS)
    for plot in ("tok_s_vs_batch.png", "speedup.png", "tpot_distribution.png"):
        assert _red_pixels(tmp_path / "valid" / plot) == 0, plot
        assert _red_pixels(tmp_path / "invalid" / plot) > 50, plot


def test_plot_links_are_relative_and_name_the_drawn_files(valid_run: tuple[RunDir, Summary]) -> None:
    run_dir, summary = valid_run
    text = render_report(run_dir, summary)
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert links == [f"plots/{p.name}" for p in plots_for(summary)] and len(links) == 4
    write_plots(run_dir, summary)
    assert all((run_dir.root / link).is_file() for link in links)  # resolve next to report.md
    hosted = render_report(run_dir, summary, ReportInputs(image_base="https://example.org/pr-7/"))
    assert re.findall(r"!\[[^\]]*\]\(([^)]+)\)", hosted) == [
        f"https://example.org/pr-7/{p.name}" for p in plots_for(summary)
    ]
    unembedded = render_report(run_dir, summary, ReportInputs(image_base=None))
    assert "![" not in unembedded and "`plots/speedup.png`" in unembedded


def test_bundle_text_never_becomes_markdown(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path / "run", SPEC)
    hostile = "# ✅ verified [click](https://evil.example) <img src=x> **bold** `tick`"
    plan = run_dir.plan_yaml.read_text().replace("name: synthetic", f"name: {json.dumps(hostile)}")
    atomic_write_text(run_dir.plan_yaml, plan)
    record = json.loads(run_dir.server_record("candidate").read_text())
    record["argv"] = ["vllm", "serve", "`x` | ![img](https://evil.example/i.png)"]
    atomic_write_json(run_dir.server_record("candidate"), record)
    text = render_report(run_dir, derive(run_dir))
    assert text.splitlines()[1].startswith(
        "# byog report: \\# ✅ verified \\[click\\](https\u2060://evil.example) \\<img src=x\\>"
    )
    assert (
        "``vllm serve `x` \\| ![img](https://evil.example/i.png)``" in text
    )  # a code span, pipe escaped for the table
    outside_code = re.sub(r"(`+).*?\1", "", text)
    assert "](https://evil.example" not in outside_code.replace("\\](", "")
    assert not re.search(r"(?<!\\)<img", outside_code)


def test_claims_are_judged_in_the_headline(valid_run: tuple[RunDir, Summary]) -> None:
    run_dir, summary = valid_run
    ratio = next(
        c for c in summary.bench.comparisons if c.point_id == "decode-b1-isl4-osl8" and c.metric == "decode_tok_s"
    ).ratio
    claims = ClaimsFile.model_validate(
        {
            "claims": [
                {
                    "kind": "ratio",
                    "name": "B=1 speed-up",
                    "candidate": "candidate",
                    "baseline": "baseline",
                    "point": "decode-b1-isl4-osl8",
                    "metric": "decode_tok_s",
                    "value": round(ratio, 3),
                },
                {
                    "kind": "ratio",
                    "name": "B=4 speed-up, overstated",
                    "candidate": "candidate",
                    "baseline": "baseline",
                    "point": "decode-b4-isl4-osl8",
                    "metric": "decode_tok_s",
                    "value": 2.0,
                },
                {
                    "name": "agentic",
                    "server": "candidate",
                    "select": {"workload": "agentic"},
                    "metric": "tok_s_user.p90",
                    "value": 400,
                    "not_checked": "no agentic workload",
                },
            ]
        }
    )
    text = render_report(run_dir, summary, ReportInputs(claims=tuple(claims.claims)))
    headline = text.split("## Performance", 1)[0]
    assert "❌ 1 of 3 claims hold (±5%)." in headline  # the holding one counted, not listed
    assert "B=1 speed-up" not in headline
    assert "| ❌ fails | B=4 speed-up, overstated | 2× (±5%) | " in headline
    assert "| ➖ not checked | agentic | 400 tok/s (±5%) | no agentic workload |" in headline
    assert render_report(run_dir, summary) != text  # the bundle's own report has only its own claims.yaml


def test_conditions_observed_discordance_and_one_se_are_shown_beside_the_verdicts(
    valid_run: tuple[RunDir, Summary],
) -> None:
    run_dir, summary = valid_run
    flagged = summary.model_copy(deep=True)
    first = flagged.bench.comparisons[0]
    first.conditions = "the two servers ran under different GPU conditions (mean SM clock 1860 vs 1980 MHz)"
    text = render_report(run_dir, flagged)
    assert "### ≠ Different GPU conditions" in text and f"- {first.point_id}, " in text
    assert "mean SM clock 1860 vs 1980 MHz" in text and "≠" not in render_report(run_dir, summary)
    (verdict,) = summary.evals.verdicts  # the synthetic pair: 8 of 20 greedy items differ
    assert verdict.observed_redraw is not None and verdict.screening_label is not None
    assert f"({md_text(verdict.screening_label)})" in text  # in the Accuracy table's verdict cell
    assert f"observed discordance {verdict.discordant} of {verdict.n} items" in text
    assert f"sound from n = {verdict.sound_n:,}" in text
    old = render_report(run_dir, summary, report_format=4)  # format 4's headline row (cell-escaped)
    assert f"\\|d\\| ≤ 1 SE: {'yes' if verdict.within_1se else 'no'}" in old
