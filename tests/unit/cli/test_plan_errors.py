"""Bad plans: one sentence naming the problem and the file, exit 2, no traceback, nothing started."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from byog.cli import app
from byog.plans import load_plan

runner = CliRunner()

GOOD = """\
name: t
model: {path: builtin:smollm2-135m-instruct, max_model_len: 4096}
servers:
  candidate: {runtime: local}
  baseline: {runtime: local, args: ["--enforce-eager"]}
baseline: baseline
workloads:
  - {kind: batch, name: decode, batch_sizes: [1, 2], isl: [32], osl: [64]}
"""


LOCAL_IMAGE = "'servers.baseline': `image` is not a field of a local server"
LOCAL_URL = "'servers.candidate': `url` is not a field of a local server"  # no runtime: local
ENDPOINT_URL = "'servers.candidate': an endpoint server needs `url`"


def _run(tmp_path: Path, text: str) -> tuple[int, str]:
    plan = tmp_path / "bad.yaml"
    plan.write_text(text)
    result = runner.invoke(app, ["run", "--plan", str(plan), "--run-dir", str(tmp_path / "run")])
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (GOOD.replace("name: t", "name: t\nwarmup: 3"), "'warmup': unknown key"),
        (GOOD.replace("batch_sizes: [1, 2]", "batch_sizes: [1, -2]"), "'workloads[0].batch_sizes[1]'"),
        (GOOD.replace("builtin:smollm2-135m-instruct", "/no/such/model"), "/no/such/model does not exist"),
        (GOOD.replace("baseline: baseline", "baseline: stock"), "baseline 'stock' is not one of the servers"),
        (GOOD.replace("isl: [32]", "isl: [4090]"), "max_model_len = 4096"),
        ("name: [unclosed", "is not valid YAML"),
        # a server holds only its runtime's fields, and the error names the field and the runtime
        (GOOD.replace("{runtime: local, args:", "{runtime: local, image: vllm:1, args:"), LOCAL_IMAGE),
        (GOOD.replace("candidate: {runtime: local}", "candidate: {url: 'http://x'}"), LOCAL_URL),
        (GOOD.replace("candidate: {runtime: local}", "candidate: {runtime: endpoint}"), ENDPOINT_URL),
        (GOOD.replace("candidate: {runtime: local}", "candidate: {runtime: k8s}"), "'runtime' is one of endpoint,"),
    ],
)
def test_bad_plan_is_one_sentence_exit_2(tmp_path: Path, text: str, expected: str) -> None:
    code, output = _run(tmp_path, text)
    assert code == 2, output
    assert expected in output
    assert "bad.yaml" in output
    assert "Traceback" not in output
    assert len(output.strip().splitlines()) <= 2  # one sentence (rich may wrap a long one)
    assert not (tmp_path / "run").exists()  # refused before a run directory was made


def test_missing_plan_file(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", "--plan", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2
    assert "does not exist" in result.output


def test_builtin_smoke_profile_matches_the_spine_issue() -> None:
    plan, _ = load_plan()
    assert plan.name == "smoke"
    assert set(plan.servers) == {"candidate", "baseline"}
    assert plan.servers["baseline"].args == ["--dtype", "float32", "--enforce-eager"]
    assert plan.servers["candidate"].args == ["--dtype", "float32"]
    decode = plan.workloads[0]
    assert (decode.kind, decode.batch_sizes, decode.isl, decode.osl) == ("batch", [1, 2, 4], [32], [64])
    assert (decode.warmup_waves, decode.waves) == (1, 3)
    assert [(e.task, e.limit) for e in plan.evals] == [("gsm8k", 10), ("arithmetic_generated", 200)]


def test_profile_with_placeholders_is_refused_before_anything_starts(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", "kimi-k3-gb300", "--tier", "smoke", "--run-dir", str(tmp_path / "run")])
    assert result.exit_code == 2
    assert "still has" in result.output and "<SET-ME" in result.output
    assert not (tmp_path / "run").exists()


def test_unknown_tier_is_a_usage_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", "--tier", "huge", "--run-dir", str(tmp_path / "run")])
    assert result.exit_code == 2
    assert "unknown tier 'huge'" in result.output
