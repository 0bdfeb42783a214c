"""The reproduction rule: |ln(x_r / x_o)| <= sqrt(w_o^2 + w_r^2) + ln(1 + delta), on numbers and on
real run directories (synthetic rows in the real formats); the point sample; eval agreement;
the plan a reproduction runs."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from byog.analysis.reproduction import (
    Estimate,
    combine,
    compare_eval_items,
    compare_numerics,
    compare_point,
    family_z_scale,
    for_the_family,
    judge,
    sample_points,
    tolerance,
)
from byog.analysis.summary import derive_summary
from byog.core.errors import UsageError
from byog.core.io import atomic_write_json
from byog.core.paths import RunDir
from byog.plans.expand import expand_plan
from byog.plans.load import load_plan
from byog.plans.subset import Overrides, Selection, reproduction_plan
from byog.schemas.evals import EvalItemRow
from byog.schemas.numerics import NumericsComparison, NumericsSummary
from byog.schemas.reproduction import PointReproduction
from tests.support.synthetic import SyntheticSpec, make_run_dir

SPEC = SyntheticSpec(batch_sizes=(1, 4), isl=4, osl=16, warmup_waves=0, waves=4, eval_items=4, log_lines=2)
POINT = "decode-b4-isl4-osl16"


def test_tolerance_is_the_ci_of_the_difference_plus_the_run_noise() -> None:
    original, reproduced = Estimate(100.0, 95.0, 105.0), Estimate(101.0, 99.0, 103.0)
    w_o, w_r = (math.log(105) - math.log(95)) / 2, (math.log(103) - math.log(99)) / 2
    assert tolerance(original, reproduced, 0.05) == pytest.approx(math.hypot(w_o, w_r) + math.log(1.05))
    assert tolerance(original, reproduced, 0.05, sides=2) == pytest.approx(
        math.hypot(w_o, w_r) + math.sqrt(2) * math.log(1.05)
    )
    assert tolerance(original, Estimate(101.0), 0.05) == pytest.approx(
        w_o + math.log(1.05)
    )  # w_r = 0: the CI widened by delta


def test_judge_reproduces_inside_the_tolerance_and_not_outside() -> None:
    original = Estimate(100.0, 98.0, 102.0)
    allowed = tolerance(original, Estimate(1.0, 0.98, 1.02), 0.05)
    inside = judge(
        "value", "candidate", "p", "decode_tok_s", original, Estimate(100 * math.exp(allowed * 0.99), 98.0, 102.0), 0.05
    )
    outside = judge(
        "value", "candidate", "p", "decode_tok_s", original, Estimate(100 * math.exp(allowed * 1.01), 98.0, 102.0), 0.05
    )
    assert inside.outcome == "reproduced" and outside.outcome == "not reproduced"
    faster = judge(
        "value", "candidate", "p", "tpot_s.p50", Estimate(0.016, 0.0158, 0.0162), Estimate(0.020, 0.0197, 0.0203), 0.05
    )
    assert faster.outcome == "not reproduced" and faster.deviation == pytest.approx(math.log(1.25))
    single = judge("value", "candidate", "p", "tpot_s.p50", Estimate(0.02), Estimate(0.0203), 0.05)
    assert single.outcome == "reproduced" and "no CI for the original or reproduction" in single.note
    skipped = judge(
        "value",
        "candidate",
        "p",
        "tpot_s.p50",
        Estimate(0.02, 0.019, 0.021),
        Estimate(0.04, 0.039, 0.041),
        0.05,
        skip="the reproduction's point is invalid (client saturated)",
    )
    assert (
        skipped.outcome == "not compared"
        and skipped.deviation == pytest.approx(math.log(2))
        and "invalid" in skipped.note
    )
    missing = judge("value", "candidate", "p", "decode_tok_s", Estimate(100.0), Estimate(None), 0.05)
    assert missing.outcome == "not compared" and missing.note == "the reproduction has no value"


def test_outcomes_combine_strictly() -> None:
    assert combine(["reproduced", "not compared"]) == "reproduced"
    assert combine(["reproduced", "not reproduced"]) == "not reproduced"
    assert combine(["not compared"]) == combine([]) == "not compared"


def test_the_sample_is_drawn_by_the_hash_and_is_deterministic() -> None:
    ids = [f"decode-b{b}-isl32-osl64" for b in (1, 2, 4, 8, 16)]
    first = sample_points(ids, "a" * 64, 2)
    assert first == sample_points(list(reversed(ids)), "a" * 64, 2) and len(first) == 2 and set(first) <= set(ids)
    assert len({tuple(sample_points(ids, f"{seed:064x}", 2)) for seed in range(20)}) > 3  # other bundles, other points
    assert sample_points(ids, "b" * 64, 3)[:2] == sample_points(
        ids, "b" * 64, 2
    )  # a bigger sample adds points, keeps the first
    assert sorted(sample_points(ids, "b" * 64, 10)) == sorted(ids)


def _row(item: int, answer: str | None, sha: str = "x") -> EvalItemRow:
    return EvalItemRow(
        item_id=f"test:{item}",
        item_sha256=f"{sha}{item}",
        pass_index=0,
        seed=1,
        extracted_answer=answer,
        target="1",
        score=1.0 if answer == "1" else 0.0,
    )


def test_eval_items_agree_on_extracted_answers() -> None:
    original = [_row(i, str(i % 3)) for i in range(5)]
    same = compare_eval_items("candidate", "gsm8k", original, [_row(i, str(i % 3)) for i in range(4)])
    assert (same.items, same.agreed, same.agreement, same.outcome) == (4, 4, 1.0, "reproduced")
    one_off = compare_eval_items(
        "candidate", "gsm8k", original, [_row(0, "0"), _row(1, "1"), _row(2, "9"), _row(3, "0"), _row(4, "1")]
    )
    assert (one_off.agreed, one_off.differing, one_off.outcome) == (4, ["test:2"], "reproduced")  # 0.8 >= 0.8
    two_off = compare_eval_items("candidate", "gsm8k", original, [_row(0, "0"), _row(1, "7"), _row(2, "9")])
    assert two_off.outcome == "not reproduced" and two_off.agreement == pytest.approx(1 / 3)
    other_data = compare_eval_items("candidate", "gsm8k", original, [_row(0, "0", sha="y")])
    assert other_data.outcome == "not compared" and "other data" in other_data.note


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[RunDir, object]]:
    """An original, an honest re-run of it (other random noise), and a doctored original whose
    candidate TPOT is 20% faster than measured."""
    base = tmp_path_factory.mktemp("reproduction")
    made = {
        "original": make_run_dir(base / "original", SPEC),
        "again": make_run_dir(base / "again", replace(SPEC, seed=99)),
        "doctored": make_run_dir(base / "doctored", replace(SPEC, candidate_speedup=SPEC.candidate_speedup / 0.8)),
    }
    return {name: (rd, derive_summary(rd)) for name, rd in made.items()}


def _checks(point: PointReproduction) -> dict[tuple[str, str, str], str]:
    return {(c.kind, c.server, c.metric): c.outcome for c in point.checks}


def test_an_honest_rerun_reproduces_every_value_and_ratio(runs: dict[str, tuple[RunDir, object]]) -> None:
    point = compare_point(
        POINT, ["candidate", "baseline"], [("candidate", "baseline")], runs["original"], runs["again"], 0.05, True, 1234
    )
    outcomes = _checks(point)
    assert set(outcomes) == {
        (k, s, m)
        for k, s in (("value", "candidate"), ("value", "baseline"), ("ratio", "candidate"))
        for m in ("decode_tok_s", "tpot_s.p50", "ttft_s.p50")
    }
    assert point.outcome == "reproduced" and set(outcomes.values()) == {"reproduced"}, point.checks
    assert point.load == "B=4"


def test_a_doctored_candidate_is_caught_and_its_baseline_still_reproduces(
    runs: dict[str, tuple[RunDir, object]],
) -> None:
    point = compare_point(
        POINT, ["candidate", "baseline"], [("candidate", "baseline")], runs["doctored"], runs["again"], 0.05, True, 1234
    )
    outcomes = _checks(point)
    assert point.outcome == "not reproduced"
    assert (
        outcomes[("value", "candidate", "tpot_s.p50")]
        == outcomes[("value", "candidate", "decode_tok_s")]
        == "not reproduced"
    )
    assert outcomes[("ratio", "candidate", "decode_tok_s")] == "not reproduced"
    assert (
        outcomes[("value", "baseline", "tpot_s.p50")] == outcomes[("value", "baseline", "decode_tok_s")] == "reproduced"
    )
    tpot = next(c for c in point.checks if (c.kind, c.server, c.metric) == ("value", "candidate", "tpot_s.p50"))
    assert tpot.deviation == pytest.approx(math.log(1 / 0.8), rel=0.05)  # the re-run is 25% slower than claimed


def test_other_hardware_compares_ratios_only_and_invalid_points_not_at_all(
    runs: dict[str, tuple[RunDir, object]], tmp_path: Path
) -> None:
    point = compare_point(
        POINT,
        ["candidate", "baseline"],
        [("candidate", "baseline")],
        runs["doctored"],
        runs["again"],
        0.05,
        False,
        1234,
    )
    values = [c for c in point.checks if c.kind == "value"]
    assert {c.outcome for c in values} == {"not compared"} and "other hardware" in values[0].note
    assert point.outcome == "not reproduced"  # the ratio still catches the doctored speed-up
    again, _ = runs["again"]
    invalid = make_run_dir(tmp_path / "invalid", replace(SPEC, seed=99))
    record = json.loads(invalid.bench_point("candidate", POINT).read_text())
    record.update(
        schema_version=2,
        client={"cpu_share": 0.99, "cpu_share_limit": 0.9, "loop_lag_share_of_itl": 0.25, "loop_lag_floor_s": 0.002},
    )
    atomic_write_json(invalid.bench_point("candidate", POINT), record)
    point = compare_point(
        POINT,
        ["candidate", "baseline"],
        [("candidate", "baseline")],
        runs["original"],
        (invalid, derive_summary(invalid)),
        0.05,
        True,
        1234,
    )
    outcomes = _checks(point)
    assert (
        outcomes[("value", "candidate", "tpot_s.p50")]
        == outcomes[("ratio", "candidate", "tpot_s.p50")]
        == "not compared"
    )
    assert outcomes[("value", "baseline", "tpot_s.p50")] == "reproduced" and point.outcome == "reproduced"


def test_the_reproduction_plan_keeps_point_ids_servers_and_few_eval_items() -> None:
    plan, _ = load_plan(None)  # the smoke profile: candidate vs baseline, B = 1, 2, 4
    cut = reproduction_plan(plan, Overrides(), Selection(["decode-b2-isl32-osl64"], ["candidate", "baseline"], 3))
    assert [p.point_id for p in expand_plan(cut)] == ["decode-b2-isl32-osl64"]
    assert list(cut.servers) == ["candidate", "baseline"] and cut.comparisons == [("candidate", "baseline")]
    assert [(e.task, e.limit, e.passes) for e in cut.evals] == [("gsm8k", 3, 1), ("arithmetic_generated", 3, 1)]
    alone = reproduction_plan(
        plan, Overrides(), Selection(["decode-b1-isl32-osl64", "decode-b4-isl32-osl64"], ["candidate"], 0)
    )
    assert [p.point_id for p in expand_plan(alone)] == ["decode-b1-isl32-osl64", "decode-b4-isl32-osl64"]
    assert alone.baseline == "candidate" and alone.comparisons == [] and alone.evals == []
    with pytest.raises(UsageError, match="no point decode-b3"):
        reproduction_plan(plan, Overrides(), Selection(["decode-b3-isl32-osl64"], ["candidate"], 0))


def test_overrides_change_only_how_servers_start() -> None:
    plan, _ = load_plan(None)
    changed = reproduction_plan(
        plan,
        Overrides(
            images=["candidate=registry/vllm@sha256:" + "a" * 64],
            server_args=["--max-model-len=2048", "baseline=--seed=3"],
            endpoints=["baseline=http://127.0.0.1:9"],
            model_path="/models/smollm2",
        ),
    )
    assert (changed.servers["candidate"].runtime, changed.servers["candidate"].image) == (
        "docker",
        "registry/vllm@sha256:" + "a" * 64,
    )
    assert changed.servers["candidate"].args == ["--dtype", "float32", "--max-model-len=2048"]
    assert changed.servers["baseline"].args == [
        "--dtype",
        "float32",
        "--enforce-eager",
        "--max-model-len=2048",
        "--seed=3",
    ]
    assert (changed.servers["baseline"].runtime, changed.servers["baseline"].url) == ("endpoint", "http://127.0.0.1:9")
    assert changed.model.path == "/models/smollm2"
    assert [p.point_id for p in expand_plan(changed)] == [p.point_id for p in expand_plan(plan)]
    for bad in (Overrides(endpoints=["http://127.0.0.1:9"]), Overrides(images=["candidat=img"])):
        with pytest.raises(UsageError):
            reproduction_plan(plan, bad)


def test_the_family_scale_is_bonferronis() -> None:
    assert family_z_scale(0) == family_z_scale(1) == 1.0
    assert family_z_scale(9) == pytest.approx(1.4148, abs=1e-4)
    assert family_z_scale(18) == pytest.approx(1.5262, abs=1e-4)  # z(1 - 0.05/36) / z(0.975)


def _honest_reproductions(rng: np.random.Generator, n: int, checks: int) -> list[list[PointReproduction]]:
    """n reproductions of `checks` values: both sides draw ln x ~ N(0, sigma), each with its own 95% CI."""
    sigma, z = 0.02, 1.959964
    out = []
    for o, r in zip(rng.normal(0, sigma, (n, checks)), rng.normal(0, sigma, (n, checks)), strict=True):
        found = [
            judge(
                "value",
                "candidate",
                "p",
                f"m{i}",
                Estimate(math.exp(a), math.exp(a - z * sigma), math.exp(a + z * sigma)),
                Estimate(math.exp(b), math.exp(b - z * sigma), math.exp(b + z * sigma)),
                0.0,
            )
            for i, (a, b) in enumerate(zip(o, r, strict=True))
        ]
        out.append(
            [
                PointReproduction(
                    point_id="p",
                    load="B=1",
                    servers=["candidate"],
                    outcome=combine([c.outcome for c in found]),
                    checks=found,
                )
            ]
        )
    return out


def test_the_family_of_checks_holds_together_at_the_ci_level() -> None:
    """18 checks (two points: three metrics of two servers and of their ratio): an honest reproduction fails
    ~60% of the time when each check stands alone at 95%, and <= 5% once the family is widened."""
    runs = _honest_reproductions(np.random.default_rng(7), 2000, 18)
    alone = np.mean([combine([p.outcome for p in run]) == "not reproduced" for run in runs])
    widened = [for_the_family(run, 0.0) for run in runs]
    together = np.mean([combine([p.outcome for p in points]) == "not reproduced" for points, _, _ in widened])
    assert 0.55 < alone < 0.65, alone  # 1 - 0.95^18 = 0.60: the control
    assert together <= 0.05, together
    assert {(m, round(z, 4)) for _, m, z in widened} == {(18, 1.5262)}


def _numerics(*verdicts: tuple[str, str]) -> NumericsSummary:
    return NumericsSummary(
        comparisons=[NumericsComparison(candidate=c, baseline="stock", verdict=v, families=[]) for c, v in verdicts]
    )


def test_a_numerics_verdict_reproduces_only_when_it_is_the_originals() -> None:
    original = _numerics(("same", "numerically equivalent"), ("drifted", "numerically equivalent"), ("flat", "drifts"))
    again = _numerics(
        ("same", "numerically equivalent"), ("drifted", "drifts"), ("flat", "insensitive"), ("new", "diverges")
    )
    got = {n.candidate: (n.original, n.reproduced, n.outcome) for n in compare_numerics(original, again)}
    assert got == {
        "same": ("numerically equivalent", "numerically equivalent", "reproduced"),
        "drifted": ("numerically equivalent", "drifts", "not reproduced"),
        "flat": ("drifts", "insensitive", "not compared"),  # a method that cannot see confirms nothing
        "new": (None, "diverges", "not compared"),
    }
    assert combine([n.outcome for n in compare_numerics(original, again)]) == "not reproduced"
    assert compare_numerics(original, None) == []
