"""Every mistake a plan can hold is found before a server starts, all of them at once.

The vLLM flag check is real: the installed vLLM's own serve parser, in this interpreter (its
answer is cached, so only the first test of a session pays its import).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from byog.cli import app
from byog.pipeline.preflight import preflight
from byog.plans.load import parse_plan

runner = CliRunner()

PLAN = """\
name: typos
model: {path: builtin:smollm2-135m-instruct, max_model_len: 4096}
servers:
  candidate: {runtime: local, args: ["--no-enable-prefix-cacheing"]}
  baseline: {runtime: local, args: ["--enforce-eager"]}
  tuned: {runtime: local, args: ["--seed", "abc"]}
baseline: baseline
workloads:
  - {kind: batch, name: decode, batch_sizes: [1], isl: [32], osl: [16]}
evals:
  - {task: gsm9k, limit: 10}
"""

VALUE = "server 'tuned': argument --seed: invalid int value: 'abc'"  # vLLM's own words
TASK = "'evals[0].task': unknown eval task 'gsm9k' (did you mean `gsm8k`?)"
FLAG = (
    "server 'candidate': unknown vLLM argument '--no-enable-prefix-cacheing' "
    "(did you mean '--no-enable-prefix-caching'?)"
)


@pytest.fixture()
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Runs land in tmp_path/runs; any server start fails the test."""

    def must_not_start(*args: object, **kwargs: object) -> None:
        raise AssertionError("a server was started")

    monkeypatch.setattr("byog.pipeline.run.run_server", must_not_start)
    monkeypatch.setattr("byog.pipeline.run.prepare_model", must_not_start)
    monkeypatch.setenv("BYOG_RUNS_DIR", str(tmp_path / "runs"))
    return tmp_path


@pytest.mark.parametrize("command", ["plan", "run"])
def test_a_task_typo_and_vllm_argument_mistakes_are_all_refused_before_anything_starts(
    isolated: Path, command: str
) -> None:
    plan = isolated / "typos.yaml"
    plan.write_text(PLAN)
    result = runner.invoke(app, [command, str(plan)])
    assert result.exit_code == 2, result.output
    assert f"{plan}: 3 problems, nothing started" in result.output
    assert TASK in result.output and FLAG in result.output and VALUE in result.output
    assert "Traceback" not in result.output
    assert not (isolated / "runs").exists()
    if command == "run":
        assert f"to resume: byog run {plan} (once that is fixed)" in " ".join(result.output.split())


def test_an_unknown_key_with_a_second_problem_lists_both_with_the_key_it_meant(isolated: Path) -> None:
    plan = isolated / "keys.yaml"
    plan.write_text(
        PLAN.replace("batch_sizes: [1]", "batch_size: [1]").replace('args: ["--enforce-eager"]', "argz: []")
    )
    result = runner.invoke(app, ["run", str(plan)])
    assert result.exit_code == 2, result.output
    lines = result.output
    assert "'workloads[0].batch_size': unknown key (did you mean `batch_sizes`?)" in lines
    assert "'workloads[0].batch_sizes': Field required" in lines
    assert "'servers.baseline': `argz` is not a field of a local server (did you mean `args`?)" in lines
    assert TASK in lines  # the task names are read from the YAML even when its structure is refused
    assert "more problem" not in lines
    assert not (isolated / "runs").exists()


def test_a_docker_server_says_its_flags_are_checked_where_it_runs() -> None:
    text = PLAN.replace(
        'candidate: {runtime: local, args: ["--no-enable-prefix-cacheing"]}',
        "candidate: {runtime: docker, image: 'vllm/vllm-openai@sha256:" + "0" * 64 + "', args: [--bogus-flag]}",
    ).replace("gsm9k", "gsm8k")
    text = text.replace('  tuned: {runtime: local, args: ["--seed", "abc"]}\n', "")
    notes = preflight(parse_plan(text, "t"), "t", for_run=False, env={})
    assert any("server 'candidate' (docker)" in n and "its image" in n for n in notes), notes


def test_run_claims_naming_what_the_plan_does_not_have_are_refused_before_anything_starts(isolated: Path) -> None:
    plan = isolated / "endpoints.yaml"
    plan.write_text(
        PLAN.replace("gsm9k", "gsm8k")
        .replace(
            '{runtime: local, args: ["--no-enable-prefix-cacheing"]}', "{runtime: endpoint, url: 'http://127.0.0.1:9'}"
        )
        .replace('{runtime: local, args: ["--enforce-eager"]}', "{runtime: endpoint, url: 'http://127.0.0.1:9'}")
        .replace('  tuned: {runtime: local, args: ["--seed", "abc"]}\n', "")
    )
    claims = isolated / "claims.yaml"
    claims.write_text(
        "schema_version: 1\nclaims:\n"
        "  - {name: b1, server: candidate, point: decode-b1-isl32-osl61, metric: decode_tok_s, value: 1}\n"
        "  - {name: who, server: candiate, point: decode-b1-isl32-osl16, metric: decode_tok_s, value: 1}\n"
        "  - {kind: verdict, task: gsm8, candidate: candidate, verdict: equivalent}\n"
    )
    result = runner.invoke(app, ["run", str(plan), "--claims", str(claims)])
    assert result.exit_code == 2, result.output
    output = " ".join(result.output.split())
    assert "3 problems, nothing started" in output
    assert (
        "claim 'b1': candidate has no point 'decode-b1-isl32-osl61' in the plan (did you mean `decode-b1-isl32-osl16`?)"
        in output
    )
    assert "claim 'who': no server 'candiate' in the plan (did you mean `candidate`?)" in output
    assert "the plan runs no eval 'gsm8' (did you mean `gsm8k`?)" in output
    assert not (isolated / "runs").exists()


def test_a_credential_in_the_plan_is_refused_before_it_reaches_the_bundle() -> None:
    from byog.core.errors import PlanProblems

    text = PLAN.replace('"--no-enable-prefix-cacheing"', '"--hf-token=hf_abc"').replace("gsm9k", "gsm8k")
    text = text.replace('args: ["--enforce-eager"]}', 'args: ["--enforce-eager"], env: {HF_TOKEN: hf_abc}}')
    text = text.replace('  tuned: {runtime: local, args: ["--seed", "abc"]}\n', "")
    with pytest.raises(PlanProblems) as caught:
        preflight(parse_plan(text, "t"), "t", for_run=False, env={})
    problems = caught.value.problems
    assert any(p.startswith("'servers.candidate.args': --hf-token puts a credential") for p in problems), problems
    assert any(p.startswith("'servers.baseline.env.HF_TOKEN' puts a credential") for p in problems), problems


PYTHONS = """\
name: pythons
model: {path: builtin:smollm2-135m-instruct, max_model_len: 4096}
servers:
  text: {python: TEXT}
  bare: {python: BARE}
  broken: {python: BROKEN}
  baseline: {runtime: local}
baseline: baseline
"""


def test_each_servers_own_python_is_refused_in_one_sentence_before_anything_starts(isolated: Path) -> None:
    import venv

    text = isolated / "notes.txt"
    text.write_text("not a program\n")
    for name in ("bare", "broken"):
        venv.EnvBuilder(with_pip=False).create(isolated / name)
    # a vLLM whose metadata is installed but whose package is not: it cannot start
    site = next((isolated / "broken" / "lib").glob("python*/site-packages"))
    (site / "vllm-0.32.0.dist-info").mkdir()
    (site / "vllm-0.32.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.32.0\n")
    plan = isolated / "pythons.yaml"
    plan.write_text(
        PYTHONS.replace("TEXT", str(text))
        .replace("BARE", str(isolated / "bare"))
        .replace("BROKEN", str(isolated / "broken"))
    )
    result = runner.invoke(app, ["plan", str(plan)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"{plan}: 3 problems, nothing started" in result.output
    out = " ".join(result.output.split())
    assert f"server 'text': python '{text}' is no Python that byog can run" in out
    assert f"server 'bare': python '{isolated / 'bare' / 'bin' / 'python'}' has no vLLM installed" in out
    assert f"server 'broken': the vLLM in python '{isolated / 'broken' / 'bin' / 'python'}' cannot start" in out
    assert "server 'baseline'" not in out


def test_an_eval_whose_looks_need_more_items_than_its_data_holds_is_refused_before_the_bench(isolated: Path) -> None:
    """byog's arithmetic ships 200 items: a limit of 400 would be refused only when the evals begin,
    after the bench; a limit within its data, or an eval without looks, is no problem."""
    looks = "  - {task: arithmetic_generated, limit: 400, looks: [0.5, 1.0]}\n"
    text = PLAN.replace('["--no-enable-prefix-cacheing"]', "[]").replace('["--seed", "abc"]', "[]")
    plan = isolated / "looks.yaml"
    plan.write_text(text.replace("  - {task: gsm9k, limit: 10}\n", looks))
    for command in ("plan", "run"):
        result = runner.invoke(app, [command, str(plan)])
        assert result.exit_code == 2, result.output
        assert (
            "'evals[0].limit': 400 is above the 200 items of arithmetic_generated (generated "
            "(byog/arithmetic-generated), not a published benchmark), and its looks are fractions of the limit: "
            "set it to 200 or fewer"
        ) in " ".join(result.output.split())
    for fine in (looks.replace("400", "200"), looks.replace(", looks: [0.5, 1.0]", "")):
        plan.write_text(text.replace("  - {task: gsm9k, limit: 10}\n", fine))
        assert runner.invoke(app, ["plan", str(plan)]).exit_code == 0
