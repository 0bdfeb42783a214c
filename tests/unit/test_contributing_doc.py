"""docs/contributing.md's CPU walkthrough, executed: `byog init` with the guide's flags and `byog plan` on what
it wrote run for real; `byog run --tier smoke` of that plan is the suite's one smoke run
(tests/integration/test_e2e_run.py runs the smoke profile and holds its recorded plan equal to this one), so
here the written plan must be the smoke profile in everything a run measures, at every tier."""

from __future__ import annotations

from pathlib import Path

from byog.plans.load import load_plan
from tests.support.contributing import GUIDE, checked_commands, measured, run_guide_command


def test_readme_links_the_guide_first() -> None:
    readme = (GUIDE.parents[1] / "README.md").read_text(encoding="utf-8")
    links = [part.split(")")[0] for part in readme.split("](")[1:]]
    assert links[0] == "docs/contributing.md", links[:3]


def test_the_guides_cpu_walkthrough_runs(tmp_path: Path) -> None:
    commands = checked_commands()
    assert [c[:2] for c in commands] == [["byog", "init"], ["byog", "plan"], ["byog", "run"]]
    init, plan, run = commands
    for command in (init, plan):
        done = run_guide_command(command, tmp_path)
        assert done.returncode == 0, (command, done.stdout[-3000:], done.stderr[-3000:])
    written, _ = load_plan(str(tmp_path / run[2]))
    smoke, _ = load_plan("smoke")
    assert run[3:] == ["--tier", "smoke"]
    for tier in ("smoke", "standard", "full"):
        assert measured(written, tier) == measured(smoke, tier), tier
