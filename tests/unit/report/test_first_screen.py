"""The first screen (report format 5's headline), as GitHub renders it: per pair the setup, then
every warning that voids or limits the claim, then what changed with regressions first, claims
collapsed to a count, accuracy in plain words."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from byog.core.paths import RunDir
from byog.report.markdown import render_report
from byog.schemas.summary import Summary
from tests.support.cmark import render_gfm
from tests.support.report_runs import derive
from tests.support.synthetic import SyntheticSpec, make_run_dir, plan_yaml

SPEC = SyntheticSpec(batch_sizes=(1, 2), eval_items=4)
SYNTHETIC_SPEC = json.dumps(
    {
        "method": "ngram",
        "num_speculative_tokens": 7,
        "rejection_sample_method": "synthetic",
        "synthetic_acceptance_length": 6,
    }
)


@pytest.fixture(scope="module")
def spec_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunDir, Summary]:
    """A speculative-decoding run as the H200 mirror ran it: synthetic acceptance, dummy weights, no eval."""
    text = plan_yaml(SPEC)
    text = text[: text.index("evals:")] + text[text.index("seeds:") :]  # no eval
    run_dir = make_run_dir(tmp_path_factory.mktemp("spec") / "run", SPEC, plan_text=text)
    shutil.rmtree(run_dir.root / "evals", ignore_errors=True)
    for server, extra in (
        ("candidate", ["--speculative-config", SYNTHETIC_SPEC, "--load-format", "dummy"]),
        ("baseline", ["--load-format", "dummy"]),
    ):
        path = run_dir.server_record(server)
        record = json.loads(path.read_text())
        record["argv"] = [*record["argv"], *extra]
        path.write_text(json.dumps(record))
    return run_dir, derive(run_dir)


def _first_screen(html: str) -> str:
    return html.split("<h2>Headline</h2>", 1)[1].split("<h2>", 1)[0]


def test_synthetic_acceptance_dummy_weights_and_no_eval_are_each_a_warning(spec_run) -> None:
    run_dir, summary = spec_run
    screen = _first_screen(render_gfm(render_report(run_dir, summary)))
    items = re.findall(r"<li>(.*?)</li>", screen, flags=re.S)
    setup, method, warnings = items[0], items[1], items[2:5]
    assert setup.startswith("<strong>candidate vs baseline</strong>: synthetic CPU, 2 cores, no GPU; ⚠ dummy weights")
    assert "candidate vLLM synthetic, commit not recorded" in setup and "baseline declared stock" in setup
    assert method.startswith("Method, candidate vs baseline: <strong>sequential</strong>: each server measured in")
    assert warnings[0].startswith(
        "⚠ Synthetic acceptance: candidate forces its drafts' acceptance at acceptance length 6"
    )
    assert warnings[1].startswith("⚠ Dummy weights: baseline, candidate ran random weights")
    assert warnings[2].startswith("❔ accuracy: not checked. No eval ran")
    assert screen.index("Synthetic acceptance") < screen.index("What changed")  # warnings before the numbers
    assert re.search(r"<td>decode B=1…2, ISL 32, OSL 64</td>\s*<td>decode tok/s</td>", screen)
    assert "e+" not in screen


def test_a_stock_run_with_real_weights_and_evals_warns_of_none_of_them(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path / "run", SPEC)
    screen = _first_screen(render_gfm(render_report(run_dir, derive(run_dir))))
    assert "Synthetic acceptance" not in screen and "Dummy weights" not in screen and "not checked" not in screen
    assert "<strong>Accuracy</strong>" in screen and "percentage points (candidate − baseline), 90% CI" in screen
