"""``byog plan``'s decode rates (measured, the seeds' figure, a guess) and the eval capacity rule."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from byog.cli import app
from byog.core.errors import UsageError
from byog.evals.capacity import concurrency_for
from byog.pipeline.plan_rates import (
    GUESS,
    SEEDS,
    TPOT_GUESS_S,
    VLLM_DEFAULT_MAX_NUM_SEQS,
    RateLookup,
    SeedRates,
    concurrency_said,
    eval_estimates,
    served_capacity,
)
from byog.plans.expand import expand_plan
from byog.plans.load import load_plan, parse_plan
from byog.plans.tiers import apply_tier

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_capacity_is_kv_tokens_over_one_request_capped_by_max_num_seqs() -> None:
    capacity = concurrency_for
    assert capacity(64 * 33768, 1024 + 32768, 1024) == 63
    assert capacity(64 * 33768, 1024 + 256, 256) == 256
    assert capacity(1000, 33792, 256) == 1  # a request larger than the cache still runs one at a time
    assert capacity(None, 33792, 128) == 128  # nothing known of the KV cache: max_num_seqs alone


def test_seeds_figure_is_the_published_decode_rate_of_the_profile() -> None:
    seeds = SeedRates(load_plan("kimi-k3-gb300")[0])
    b1 = seeds.rate("candidate-tp8", 1)
    assert b1 is not None and b1.source == SEEDS and b1.tpot_s == pytest.approx(1 / 193.3)
    # the baseline has no value claim at B=1: the candidate's over the claimed speed-up 1.58
    base = seeds.rate("baseline-tp8", 1)
    assert base is not None and base.tpot_s == pytest.approx(1.58 / 193.3)
    # the stock speculative server at B=1: the seeds' own 488 tok/s (~2 ms per token)
    spec = seeds.rate("baseline-tp16-spec-synth", 1)
    assert spec is not None and spec.tpot_s == pytest.approx(1 / 488)
    # above the largest published B the throughput is held: TPOT grows with B (an upper bound)
    big = seeds.rate("candidate-tp16", 256)
    assert big is not None and big.tpot_s == pytest.approx(256 / 3606.1) and "held up to B=256" in big.why
    # a server with no figure of its own borrows one on the same side with the same TP, and says so
    borrowed = seeds.rate("baseline-tp16-spec", 64)
    assert borrowed is not None and borrowed.tpot_s == pytest.approx(64 * 1.62 / 3606.1)
    assert "as baseline-tp16" in borrowed.why


def test_a_plan_with_no_claims_file_and_no_run_is_a_guess() -> None:
    plan = load_plan("smoke")[0]
    assert RateLookup(plan, {})("candidate", "any", 4) == GUESS and GUESS.tpot_s == TPOT_GUESS_S


def test_a_measured_point_wins_over_the_seeds_figure() -> None:
    plan = load_plan("kimi-k3-gb300")[0]
    rates = RateLookup(plan, {("candidate-tp8", "decode-b1-isl1-osl1000"): (0.004, 0.2)})
    assert rates("candidate-tp8", "decode-b1-isl1-osl1000", 1).tpot_s == 0.004
    assert rates("candidate-tp8", "decode-b2-isl1-osl1000", 2).source == "server median"
    assert rates("baseline-tp8", "decode-b2-isl1-osl1000", 2).source == SEEDS


PLAN = """\
name: evalcap
model: {path: "builtin:smollm2-135m-instruct"}
servers:
  a: {args: [--max-num-seqs, "16"]}
  b: {}
baseline: b
workloads:
  - {kind: batch, name: d, batch_sizes: [4], isl: [1000], osl: [1000]}
evals:
  - {task: gsm8k, limit: 100}
"""


def test_eval_concurrency_follows_the_servers_capacity() -> None:
    plan = parse_plan(PLAN, "p.yaml")
    rows = {r["server"]: r for r in eval_estimates(plan, expand_plan(plan), RateLookup(plan, {}))}
    # gsm8k: 1024 prompt tokens reserved + 256 max tokens; the KV cache holds B=4 x 2000 = 8000 tokens
    assert rows["a"]["concurrency"] == rows["b"]["concurrency"] == 8000 // 1280 == 6
    assert "KV tokens assumed" in rows["a"]["kv_why"]
    assert rows["a"]["estimate_s"] == pytest.approx(17 * (0.1 + 128 * TPOT_GUESS_S))  # ceil(100 / 6) rounds
    wide = parse_plan(PLAN.replace("batch_sizes: [4]", "batch_sizes: [400]"), "p.yaml")
    rows = {r["server"]: r for r in eval_estimates(wide, expand_plan(wide), RateLookup(wide, {}))}
    assert rows["a"]["concurrency"] == 16 and "--max-num-seqs" in rows["a"]["concurrency_why"]
    assert rows["b"]["concurrency"] == VLLM_DEFAULT_MAX_NUM_SEQS


def test_an_answer_length_set_as_max_tokens_is_the_one_the_estimate_charges() -> None:
    """lm-eval sends max_tokens over max_gen_toks: the estimate charges what the requests will ask for."""
    plan = parse_plan(
        PLAN.replace("{task: gsm8k, limit: 100}", "{task: gsm8k, limit: 100, gen_kwargs: {max_tokens: 64}}"), "p.yaml"
    )
    rows = {r["server"]: r for r in eval_estimates(plan, expand_plan(plan), RateLookup(plan, {}))}
    assert rows["a"]["concurrency"] == 8000 // (1024 + 64) == 7
    assert rows["a"]["estimate_s"] == pytest.approx(15 * (0.1 + 32 * TPOT_GUESS_S))  # ceil(100 / 7) rounds


def test_the_flagship_first_screen_names_wall_tiers_largest_items_and_assumptions() -> None:
    result = CliRunner().invoke(app, ["plan", "kimi-k3-gb300", "--tier", "standard"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("plan 'kimi-k3-gb300', tier standard: ")
    assert " h wall expected, " in lines[0] and " h at most, " in lines[0]  # its evals have looks
    assert "GPU-hours" in lines[0]
    assert len(lines) <= 30 and "srun" not in result.output  # one screen; the launch lines are --details
    tiers = [x.split("|")[1].strip() for x in lines if x.startswith("| ")][1:]  # after the header row
    assert tiers == ["smoke", "standard \\<", "full"]
    at = lines.index("largest items:")
    assert [x[:5] for x in lines[at + 1 : at + 4]] == ["  1. ", "  2. ", "  3. "]
    said = result.output[result.output.index("assumptions:") :]
    assert "seeds' figure for 124" in said and "claims/kimi-k3-gb300.claims.yaml" in said
    assert "aime25 63" in said and "KV tokens assumed" in said
    relaunch = next(x for x in lines if x.startswith("  - relaunch (7): "))  # 7 servers start twice
    assert "fresh container" in relaunch and "page cache across launches: unknown" in relaunch
    launches = next(x for x in lines if x.startswith("  - launches: "))
    assert launches.startswith(
        "  - launches: 2 for 40 points (decode, interactivity, spec-decode); "
        "1 for 84 points (longctx-tp8, longctx-tp16, longctx-dcp8); perf labels screening"
    )
    assert "candidate-tp16-spec, baseline-tp16-spec: evals only, started once" in launches
    details = CliRunner().invoke(app, ["plan", "kimi-k3-gb300", "--details"], env={"COLUMNS": "200"})
    assert details.exit_code == 0 and "srun (node 0)" in details.output and "assumptions:" in details.output


def test_the_standard_tier_costs_less_than_full_with_evals_counted() -> None:
    plan = load_plan("kimi-k3-gb300")[0]
    from byog.pipeline.planview import estimate_plan

    full, standard = estimate_plan(plan), estimate_plan(apply_tier(plan, "standard"))
    assert 0 < standard["evals_total_s"] < full["evals_total_s"]
    assert standard["evals_gpu_hours"] == pytest.approx(standard["evals_total_s"] / 3600 * 16)


def test_from_run_takes_what_each_server_reported_it_holds(tmp_path: Path) -> None:
    info = json.loads((FIXTURES / "server-info" / "stock.json").read_text())
    record = tmp_path / "servers" / "a" / "server.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"name": "a", "resolved": {"server_info": info}}))
    (tmp_path / "servers" / "b").mkdir()
    (tmp_path / "servers" / "b" / "server.json").write_text(json.dumps({"name": "b", "resolved": None}))
    served = served_capacity(tmp_path)
    assert served == {"a": {"kv_tokens": 2912 * 32, "max_num_seqs": 128}}  # b's record kept no /server_info
    plan = parse_plan(PLAN, "p.yaml")
    rows = {r["server"]: r for r in eval_estimates(plan, expand_plan(plan), RateLookup(plan, {}), served)}
    assert rows["a"]["concurrency"] == 72 == (2912 * 32) // 1280  # under the server's max_num_seqs 128
    assert "as the server reported" in rows["a"]["kv_why"] and "assumed" in rows["b"]["kv_why"]


def test_from_run_reads_a_bundle_as_well_as_a_run_directory(tmp_path: Path) -> None:
    from byog.pipeline.planview import plan_overview

    bundle = FIXTURES / "report-v1" / "v1-bundle.tar.gz"
    plan = tmp_path / "plan.yaml"
    with tarfile.open(bundle) as tar:
        member = tar.extractfile("plan.yaml")
        assert member is not None
        text = member.read().decode()
    plan.write_text(text)
    overview = plan_overview(str(plan), "full", bundle)
    assert overview["from_run"] is not None and "a bundle, not verified" in overview["from_run"]
    assert {p["source"] for p in overview["points"]} == {"measured"}
    with pytest.raises(UsageError, match="neither a run directory nor a bundle file"):
        plan_overview("smoke", "full", bundle.with_name("missing.tar.gz"))


def test_the_largest_items_add_up_to_the_wall_and_name_what_a_plan_can_change() -> None:
    from byog.pipeline.planview import estimate_plan, largest_items

    estimate = estimate_plan(apply_tier(load_plan("kimi-k3-gb300")[0], "standard"))
    items = largest_items(estimate)
    wall = estimate["total_estimate_s"] + estimate["evals_total_s"]
    assert sum(i["seconds"] for i in items) == pytest.approx(wall)
    expected = [i["expected_seconds"] for i in items]
    assert expected == sorted(expected, reverse=True)  # by the expected wall (looks may stop an eval)
    assert sum(expected) == pytest.approx(estimate["total_estimate_s"] + estimate["evals_expected_s"])
    assert items[0]["what"].startswith("eval aime25 (4 servers x 480 requests at concurrency 63)")
    assert any(i["what"] == "start-ups (18 over 11 servers: 11 first, 7 relaunches)" for i in items)


def test_the_flagship_relaunches_only_what_its_published_figures_rest_on() -> None:
    """Two launches for every point of a workload with a published figure; one for the long-context matrix
    (none published): the servers that run nothing else (the DCP8 pair) and the two that only run evals
    (on the first launch) start once. Its servers run in containers (Pyxis): a relaunch keeps no compile
    cache and reads the weights again (the page cache is unknown), so it costs a first start."""
    from byog.pipeline.planview import estimate_plan

    estimate = estimate_plan(apply_tier(load_plan("kimi-k3-gb300")[0], "standard"))
    launches = {s["server"]: s["launches"] for s in estimate["servers"]}
    once = {"candidate-tp16-spec", "baseline-tp16-spec", "candidate-tp8-dcp8", "baseline-tp8-dcp8"}
    assert {name for name, r in launches.items() if r == 1} == once
    assert all(r == 2 for name, r in launches.items() if name not in once)
    twice = {p["workload"] for p in estimate["points"] if p["launches"] == 2}
    assert twice == {"decode", "spec-decode", "interactivity"}  # every workload a claim selects
    assert {p["workload"] for p in estimate["points"] if p["launches"] == 1} == {
        "longctx-tp8",
        "longctx-tp16",
        "longctx-dcp8",
    }
    for s in estimate["servers"]:
        assert s["restart_s"] == s["startup_s"] > 0
        assert "fresh container" in s["startup_parts"]["restart_source"]
        points = sum(p["estimate_s"] * p["launches"] for p in estimate["points"] if p["server"] == s["server"])
        assert s["estimate_s"] == pytest.approx(s["launches"] * s["startup_s"] + points)


def _without_looks(tmp_path: Path) -> Path:
    """The flagship with its lm-eval tasks' looks taken out (every item runs)."""
    from byog.plans.load import resolve_plan_path

    text = resolve_plan_path("kimi-k3-gb300")[1]
    for looks in ("    looks: &looks [0.5, 0.75, 1.0]\n", "    looks: *looks\n"):
        assert looks in text
        text = text.replace(looks, "")
    path = tmp_path / "kimi-k3-gb300.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_plan_without_looks_shows_one_figure(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["plan", str(_without_looks(tmp_path)), "--tier", "standard"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    assert " h wall, " in result.output.splitlines()[0]
    assert "expected" not in result.output and "at most" not in result.output  # no looks: every item runs


def test_a_plan_with_looks_shows_the_expected_wall_beside_the_maximum() -> None:
    from byog.pipeline.planview import plan_overview

    path = "kimi-k3-gb300"  # its lm-eval tasks have looks
    result = CliRunner().invoke(app, ["plan", path, "--tier", "standard"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) <= 30
    overview = plan_overview(str(path), "standard")
    assert overview["wall_expected_s"] < overview["wall_s"]
    assert overview["wall_s"] == pytest.approx(overview["total_estimate_s"] + overview["evals_total_s"])
    assert " h wall expected, " in lines[0] and " h at most, " in lines[0] and "GPU-hours at most" in lines[0]
    standard = next(x for x in lines if x.startswith("| standard"))
    assert standard.count("(≤ ") == 2  # evals and wall
    aime = next(x for x in lines if x.startswith("  ") and "eval aime25" in x)
    assert " expected, " in aime and " at most " in aime
    said = result.output[result.output.index("assumptions:") :]
    assert "evals with looks" in said and "discordance" in said and "the task registry's prior" in said
    assert "one margin apart" in said and "2 server(s), 3 looks, obf" in said
    assert "10 other server x task run every item" in said  # 6 earlier servers, MRCR on 4 (scored whole)
    rows = [e for e in overview["eval_time"] if e["early_stop"]]
    assert {e["server"] for e in rows} == {"baseline-tp16", "baseline-tp16-spec"}  # later in plan order
    assert all(e["expected_s"] < e["estimate_s"] for e in rows)


def test_operating_points_split_the_requests_and_cost_each_stratum_at_its_point(tmp_path: Path) -> None:
    plan = parse_plan(PLAN.replace("limit: 100}", "limit: 101, operating_points: [64, 1]}"), "p.yaml")
    rows = {r["server"]: r for r in eval_estimates(plan, expand_plan(plan), RateLookup(plan, {}))}
    assert rows["a"]["operating_points"] == {1: 51, 64: 50}
    assert rows["a"]["concurrency"] == 64 and "operating points" in rows["a"]["concurrency_why"]
    one_request = 0.1 + 128 * TPOT_GUESS_S  # TTFT guess + half of gsm8k's 256 max tokens
    # 51 one at a time; 50 at 64 in flight, of which the server holds 6 (KV 8000 // 1280): 9 rounds
    assert rows["a"]["estimate_s"] == pytest.approx((51 + 9) * one_request)
    path = tmp_path / "p.yaml"
    path.write_text(PLAN.replace("limit: 100}", "limit: 101, operating_points: [64, 1]}"))
    result = CliRunner().invoke(app, ["plan", str(path), "--details"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    # 50 items at 64: never 64 requests in flight, and byog plan says so before the run
    said = "operating points 1 (~51)/64 (~50) (64 gets ~50 items, never 64 in flight)"
    assert f"eval gsm8k (2 servers x 101 requests at {said})" in result.output
    assert f"gsm8k {said}" in result.output


def test_a_stratum_is_short_of_its_point_by_items_not_requests() -> None:
    """Passes repeat the items one pass after another: 2 passes of 101 items put 101 requests at each
    point, but at most 50 or 51 of them in flight at once."""
    text = PLAN.replace("limit: 100}", "limit: 101, passes: 2, operating_points: [1, 64]}").replace(
        "baseline: b", "baseline: b\nseeds: [1, 2]"
    )
    plan = parse_plan(text, "p.yaml")
    (row,) = [r for r in eval_estimates(plan, expand_plan(plan), RateLookup(plan, {})) if r["server"] == "a"]
    assert row["operating_points"] == {1: 101, 64: 101} and row["stratum_items"] == {1: 51, 64: 50}
    assert concurrency_said(row).endswith("(64 gets ~50 items, never 64 in flight)")
    wide = parse_plan(text.replace("limit: 101", "limit: 200"), "p.yaml")
    (row,) = [r for r in eval_estimates(wide, expand_plan(wide), RateLookup(wide, {})) if r["server"] == "a"]
    assert concurrency_said(row) == "operating points 1 (~200)/64 (~200)"


def test_byog_plan_gives_the_planned_power_of_a_no(tmp_path: Path) -> None:
    from byog.pipeline.eval_power import eval_power_rows

    plan = parse_plan(PLAN.replace("limit: 100}", "limit: 1000, operating_points: [1, 64]}"), "p.yaml")
    (full,) = [r for r in eval_power_rows(plan) if r["tier"] == "full"]
    assert full["strata"]["points"] == [1, 64] and full["strata"]["items_per_point"] == 500
    assert 0.0 < full["strata"]["no_power"] < 1.0
    assert all(r["strata"] is None for r in eval_power_rows(parse_plan(PLAN, "p.yaml")))
    path = tmp_path / "p.yaml"
    path.write_text(PLAN.replace("limit: 100}", "limit: 1000, operating_points: [1, 64]}"))
    result = CliRunner().invoke(app, ["plan", str(path), "--details"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    said = f'"accuracy depends on the batch: no" has {full["strata"]["no_power"]:.0%} planned power'
    assert f"gsm8k at operating points 1/64 (~500 items each): {said}" in result.output
