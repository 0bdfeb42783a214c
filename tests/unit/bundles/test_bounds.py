"""Hostile content: each class of the verify-hardening issue, run as a real `byog verify` process
under a 3 GiB address-space limit (tests/support/hostile.py builds the bundles at test time).

Every case must be refused with the expected sentence and exit code, in at most 10 s of wall
time and 1 GB of peak memory (the whole process tree), print each check on one line with no
escape character and no forged "ok" line, and leave its temp dir empty. `-m "not slow"` skips
the cases that build a big input (a few seconds each).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from byog.bundles.isolate import ChildLimits, run_isolated
from tests.support.hostile import CASES, CPU_LIMIT_S, PEAK_LIMIT_MB, REPRODUCE_CASES, Case, Kit, run_byog

MARKS = ("ok  ", "skip", "FAIL")


def _params() -> list:  # type: ignore[type-arg]
    return [pytest.param(case, id=case.name, marks=[pytest.mark.slow] if case.slow else []) for case in CASES]


@pytest.mark.parametrize("case", _params())
def test_hostile_bundle_is_refused_within_bounds(case: Case, kit: Kit) -> None:
    built = case.build(kit)
    outcome = run_byog(kit, built, case.name)
    print(f"{case.name}: exit {outcome.exit}, {outcome.wall_s:.2f} s, peak {outcome.peak_mb:.0f} MB\n{outcome.output}")
    assert outcome.exit == case.exit, outcome.output
    assert case.says in outcome.output, outcome.output
    assert "Traceback" not in outcome.output and "\x1b" not in outcome.output and "\r" not in outcome.output
    assert outcome.cpu_s <= CPU_LIMIT_S or not case.timed, f"{outcome.cpu_s:.1f} s of CPU ({outcome.wall_s:.1f} s wall)"
    assert outcome.peak_mb <= PEAK_LIMIT_MB, f"{outcome.peak_mb:.0f} MB"
    assert outcome.temp_left == [], outcome.temp_left
    lines = outcome.output.rstrip("\n").split("\n")
    if case.exit == 0:
        assert lines[-1].endswith(": verified"), lines
    elif case.exit == 1:
        assert lines[-1].endswith("check(s) failed)") and "not verified" in lines[-1]
        checks = [line for line in lines[:-1] if not line.startswith(("setup: ", "warning: "))]  # the first screen
        assert all(line[:4] in MARKS for line in checks), lines  # then one line per check, nothing else
        assert sum(line.startswith("ok   signature") for line in lines) <= 1
        assert not any(line.startswith("ok  ") and "forged" in line for line in lines)
    else:
        assert len(lines) == 1 and lines[0].startswith("byog: ")
    built.bundle.unlink(missing_ok=True) if built.bundle.name != "base.tar.gz" else None


@pytest.mark.parametrize("case", REPRODUCE_CASES, ids=[case.name for case in REPRODUCE_CASES])
def test_reproduce_dry_run_of_a_hostile_plan_is_refused_and_runs_nothing(case: Case, kit: Kit) -> None:
    """The benchmark's reproduce rows, as processes (tests/unit/pipeline/test_reproduce.py holds the sentences)."""
    built = case.build(kit)
    outcome = run_byog(kit, built, case.name)
    assert outcome.exit == case.exit and case.says in outcome.output, outcome.output
    assert not outcome.ran and outcome.temp_left == [], (outcome.ran, outcome.temp_left)  # no sentinel, no run dir
    if case.exit == 2:
        assert outcome.output.count("\n") == 1 and outcome.output.startswith("byog: "), outcome.output


def test_the_unmodified_bundle_verifies_under_the_same_harness(kit: Kit) -> None:
    from tests.support.hostile import Built

    outcome = run_byog(kit, Built(kit.folder / "base.tar.gz"), "base")
    assert outcome.exit == 0, outcome.output
    assert outcome.output.rstrip().endswith(": verified") and outcome.temp_left == []
    print(f"base bundle: {outcome.wall_s:.2f} s, peak {outcome.peak_mb:.0f} MB")


def test_the_checking_child_is_stopped_at_its_memory_cpu_and_time_limits() -> None:
    def allocate(emit) -> None:
        emit({"event": "start", "name": "bomb"})
        hoard = [bytearray(64 * 2**20) for _ in range(64)]  # 4 GiB
        emit({"event": "result", "name": "bomb", "status": "pass", "message": str(len(hoard))})

    def spin(emit) -> None:
        emit({"event": "start", "name": "spin"})
        while True:
            pass

    asleep_s = 30.0  # what the sleeping check would take if the wall limit did not stop it

    def sleep(emit) -> None:
        emit({"event": "start", "name": "sleep"})
        time.sleep(asleep_s)

    memory = run_isolated(allocate, ChildLimits(memory_bytes=256 * 2**20, cpu_s=30, wall_s=30))
    assert memory.stopped is not None and "memory" in memory.stopped, memory.stopped
    assert [e.get("name") for e in memory.events] == ["bomb"]
    cpu = run_isolated(spin, ChildLimits(cpu_s=1, wall_s=30))
    assert cpu.stopped is not None and "CPU limit" in cpu.stopped, cpu.stopped
    start = time.monotonic()
    wall = run_isolated(sleep, ChildLimits(cpu_s=30, wall_s=0.5))
    assert wall.stopped is not None and "stopped after 0.5 s" in wall.stopped
    assert time.monotonic() - start < asleep_s  # stopped, not waited for (however loaded the box)


def test_a_verify_killed_mid_way_leaves_a_temp_dir_the_next_verify_removes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import subprocess
    import sys
    import tempfile

    from byog.bundles.unpack import sweep_stale_temp_dirs

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"byog-verify-{dead.pid}-abc123"
    (stale / "bench").mkdir(parents=True)
    (stale / "bench" / "rows.parquet").write_bytes(b"left by a verify that was killed")
    mine = tmp_path / f"byog-verify-{os.getpid()}-live"
    mine.mkdir()
    assert sweep_stale_temp_dirs() == [stale]
    assert not stale.exists() and mine.exists()


def test_json_output_is_valid_json_whatever_the_bundle_holds(kit: Kit) -> None:
    import json

    from typer.testing import CliRunner

    from byog.cli import app
    from tests.support.hostile import FORGED_LINE

    statement = {
        "_type": "https://in-toto.io/Statement/v1",
        "predicateType": "https://byog.dev/bundle/v1",
        "subject": [{"name": "caf\udce9" + FORGED_LINE, "digest": {"sha256": "0" * 64}}],
        "predicate": kit.predicate,
    }
    manifest = json.dumps(statement).encode()  # "\udce9": a lone surrogate, as JSON allows it to be written
    cases = {
        "forged-lines-untrusted": [c for c in CASES if c.name == "forged-lines-untrusted"][0].build(kit).bundle,
        "lone-surrogate-name": kit.forge("surrogate", {"manifest.intoto.json": manifest}, trusted=False),
    }
    for name, bundle in cases.items():
        result = CliRunner().invoke(app, ["verify", str(bundle), "--allowed-signers", str(kit.allowed), "--json"])
        assert result.exit_code == 1, (name, result.output)
        doc = json.loads(result.output)  # strict: raises on NaN or invalid escapes
        assert doc["verified"] is False and doc["trust"] == "untrusted"
        assert [c["status"] for c in doc["checks"]][-1] == "skip"
        print(name, [c["message"][:90] for c in doc["checks"] if c["status"] == "fail"])
        json.dumps(doc, allow_nan=False).encode("utf-8")  # no lone surrogate survives


def test_a_reproduction_beside_a_bundle_is_shown_only_once_it_verifies(kit: Kit, tmp_path: Path) -> None:
    """`byog report` finds <bundle>.reproduction*.tar.gz beside the bundle: a stranger's (its
    reproduction.json nested 200,000 deep, never parsed) and a trusted one's over the bounds are
    each named and skipped in one line; the report of the bundle itself is still written."""
    import shutil

    from typer.testing import CliRunner

    from byog.cli import app

    deep = b"[" * 200_000 + b"]" * 200_000
    folder = tmp_path / "beside"
    folder.mkdir()
    shutil.copy(kit.folder / "base.tar.gz", folder / "bundle.tar.gz")
    for name, trusted in (("stranger", False), ("trusted-deep", True)):
        made = kit.forge(f"bundle.reproduction-{name}", {"reproduction.json": deep}, trusted=trusted)
        shutil.move(made, folder / made.name)
    result = CliRunner().invoke(
        app,
        ["report", str(folder / "bundle.tar.gz"), "-o", str(tmp_path / "out"), "--allowed-signers", str(kit.allowed)],
    )
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert lines[0].startswith("reproduction bundle.reproduction-stranger.tar.gz not shown: signature:"), lines
    assert lines[1].startswith("reproduction bundle.reproduction-trusted-deep.tar.gz not shown: bounds:"), lines
    assert "nested deeper than" in lines[1] and lines[2].startswith("wrote ") and len(lines) == 3, lines
    assert "## Reproductions" not in (tmp_path / "out" / "report.md").read_text()
