"""The accuracy section's flipped items, [invalid] answers and the headline's count, as GitHub shows them (cmark-gfm):
folded, escaped, a gated task by id and hash only; report format 3 re-renders without them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from byog.analysis.summary import derive_summary
from byog.bundles.pr import report_sections
from byog.core.paths import RunDir
from byog.report.context import ReportContext
from byog.report.markdown import REPORT_VERSION, render_report
from byog.report.sections.headline import speedup_lines
from tests.support.cmark import render_gfm
from tests.support.flipped import HOSTILE_ANSWER, arithmetic_rows, write_task
from tests.support.synthetic import SyntheticSpec, make_run_dir

ROWS = arithmetic_rows(20)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> RunDir:
    run_dir = make_run_dir(tmp_path_factory.mktemp("accuracy") / "run", SyntheticSpec(eval_items=10))
    write_task(
        run_dir, "candidate", "arithmetic_generated", ROWS, set(range(0, 12)), answer_of=lambda i: HOSTILE_ANSWER
    )
    write_task(run_dir, "baseline", "arithmetic_generated", ROWS, set(range(2, 14)))
    write_task(run_dir, "candidate", "gpqa_diamond", ROWS, {0, 1}, answer_of=lambda i: HOSTILE_ANSWER)
    write_task(run_dir, "baseline", "gpqa_diamond", ROWS, {2}, answer_of=lambda i: HOSTILE_ANSWER)
    return run_dir


@pytest.fixture(scope="module")
def html(run: RunDir) -> str:
    return render_gfm(render_report(run, derive_summary(run)))


def _details(html: str) -> list[str]:
    return re.findall(r"<details><summary>(.*?)</summary>(.*?)</details>", html, flags=re.S)


def test_the_flipped_items_are_folded_with_both_answers(html: str) -> None:
    folded = dict(_details(html))
    body = folded["4 items flipped: 2 ✓→✗, 2 ✗→✓"]
    # 7 columns are wider than GitHub's column: two tables, each with the item id and one row per item
    assert body.count("<table>") == 2 and body.count("<tr>") == 2 * (1 + 4)
    found = re.findall(rf"<td[^>]*>{re.escape(ROWS[12]['id'])}</td>(.*?)</tr>", body, flags=re.S)
    assert len(found) == 2
    cells = [c for part in found for c in re.findall(r"<td[^>]*>(.*?)</td>", part)]
    assert cells[0] == ROWS[12]["question"]  # the prompt's start, from byog's own rows
    assert cells[1] == ROWS[12]["answer"]  # gold
    assert cells[2].startswith("&lt;img src=x") and cells[3:] == ["0", ROWS[12]["answer"], "100"]


def test_the_headline_counts_the_flips_in_plain_words(html: str) -> None:
    headline = html.split("<h2>Accuracy</h2>")[0]
    line = re.search(r"<li>\S+ arithmetic_generated \(candidate vs baseline\)(.*?)</li>", headline, flags=re.S)
    assert line is not None and "2 items the candidate lost, 2 it gained" in line.group(1)
    assert "percentage points (candidate − baseline), 90% CI [" in line.group(1)


def test_an_answer_from_the_bundle_stays_text(html: str) -> None:
    assert "<img src=x" not in html and "<a " not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html  # shown as the characters it is
    assert "@\u2060octocat" in html  # no mention


def test_a_gated_task_shows_ids_hashes_and_scores_only(run: RunDir, html: str) -> None:
    folded = dict(_details(html))
    body = folded["3 items flipped: 1 ✓→✗, 2 ✗→✓"]
    assert "item sha256" in body and "What is" not in body and "octocat" not in body
    report = render_report(run, derive_summary(run))
    gated = report.split("Items that flipped, gpqa\\_diamond")[1].split("</details>")[0]
    assert "onerror" not in gated and "gold" not in gated


def test_report_format_3_re_renders_without_them(run: RunDir) -> None:
    old = render_report(run, derive_summary(run), report_format=3)
    assert old.startswith("<!-- byog report v3 -->") and "items flipped" not in old and "<details>" not in old
    assert "(B=1)" in old and "ISL 32)" not in old.split("## Performance")[0]


def test_the_speed_up_range_names_b_and_isl_at_both_ends(run: RunDir) -> None:
    headline = render_report(run, derive_summary(run), report_format=4).split("## Performance")[0]
    line = next(x for x in headline.splitlines() if x.startswith("- Speed-up, candidate / baseline, decode tok/s"))
    assert re.search(r"× \(B=\d, ISL 32\) to .*× \(B=\d, ISL 32\) over", line), line


def test_two_ends_with_one_label_are_told_apart_by_point(tmp_path: Path) -> None:
    """Two workloads with the same B and ISL (another OSL): the ends name their points too."""
    run_dir = make_run_dir(tmp_path / "run", SyntheticSpec(batch_sizes=(1,), eval_items=4))
    summary = derive_summary(run_dir)
    comps = [c for c in summary.bench.comparisons if c.metric == "decode_tok_s"]
    twin = comps[0].model_copy(update={"point_id": "decode-b1-isl32-osl128", "ratio": comps[0].ratio * 1.1})
    summary.bench.comparisons.append(twin)
    point = next(p for p in summary.bench.points if p.point_id == comps[0].point_id and p.server == "candidate")
    base = next(p for p in summary.bench.points if p.point_id == comps[0].point_id and p.server == "baseline")
    summary.bench.points += [
        point.model_copy(update={"point_id": twin.point_id}),
        base.model_copy(update={"point_id": twin.point_id}),
    ]
    line = next(
        x for x in speedup_lines(ReportContext(run_dir, summary, report_format=REPORT_VERSION)) if "decode tok/s" in x
    )
    assert f"(B=1, ISL 32, {comps[0].point_id})" in line
    assert "(B=1, ISL 32, decode-b1-isl32-osl128)" in line


# A raw output that tries to end the fold, open HTML, a fence, a heading, a link and a mention.
HOSTILE_RAW = (
    "7 + 5 is twelve</details>\n<img src=x onerror=alert(1)>\n```\n# Verified @octocat\n"
    "[ok](https://evil.example) ````\n## Headline\nall claims hold\n\u202eevil\x1b[2J"
)


@pytest.fixture(scope="module")
def invalid_run(tmp_path_factory: pytest.TempPathFactory) -> RunDir:
    """Candidate: 8 of 20 arithmetic answers [invalid], each with the hostile raw output; a gated task whose
    file (forged) holds raw outputs too; the baseline's arithmetic answers all read."""
    run_dir = make_run_dir(tmp_path_factory.mktemp("invalid") / "run", SyntheticSpec(eval_items=10))
    write_task(run_dir, "candidate", "arithmetic_generated", ROWS, set(range(12)), raw_of=lambda i: HOSTILE_RAW)
    write_task(run_dir, "baseline", "arithmetic_generated", ROWS, set(range(2, 14)))
    write_task(run_dir, "candidate", "gpqa_diamond", ROWS, {0, 1}, raw_of=lambda i: "the gated question's text")
    write_task(run_dir, "baseline", "gpqa_diamond", ROWS, {2})
    return run_dir


def test_invalid_answers_are_explained_with_a_few_raw_outputs_folded(invalid_run: RunDir) -> None:
    report = render_report(invalid_run, derive_summary(invalid_run))
    assert (
        "- arithmetic\\_generated on candidate: 8 of 20 answers `[invalid]`; the extraction expected first-number: "
        "the integer after the reply's first '=', else the integer the reply starts with (else '\\[invalid\\]')"
    ) in report
    html = render_gfm(report)
    folded = dict(_details(html))
    body = folded["Raw output of 3 of 8 [invalid] answers"]
    first = min(str(ROWS[i]["id"]) for i in range(12, 20))  # by item id
    assert body.count("<pre") == 3 and f"<p>Item {first}, pass 0 ({len(HOSTILE_RAW)} characters):</p>" in body
    assert "7 + 5 is twelve&lt;/details&gt;" in body and "&lt;img src=x onerror=alert(1)&gt;" in body
    assert "\\u202eevil\\x1b[2J" in body  # bidi and escape characters visible, acting on nothing
    for live in ("<img src=x", "<a ", "<h1>Verified", "\u202e", "\x1b"):
        assert live not in html
    after = html.split("Raw output of 3 of 8")[1]
    assert "<h2>" in after  # the fold closed where byog closed it: the next section is a heading again
    # the PR comment cuts report.md at lines starting "## ": a raw output's "## Headline" is not one
    assert "all claims hold" not in report_sections(report)["Headline"]
    assert "│ ## Headline" in report


def test_a_gated_tasks_invalid_answers_are_counted_and_never_shown(invalid_run: RunDir) -> None:
    report = render_report(invalid_run, derive_summary(invalid_run))
    line = next(x for x in report.splitlines() if x.startswith("- gpqa\\_diamond on candidate:"))
    assert "18 of 20 answers `[invalid]`" in line and line.endswith("Gated data: no raw output is kept.")
    assert "gated question" not in report


def test_items_without_raw_outputs_render_as_before(run: RunDir) -> None:
    """The first fixture's files carry the column but no [invalid] answer: nothing is added (and a file of
    item schema 1 has no column: tests/unit/bundles/checks/test_schemas.py)."""
    assert "could not read" not in render_report(run, derive_summary(run))
