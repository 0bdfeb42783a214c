"""The bundle's caveats, decided once: which conditions there are, whom each concerns, and which
attested gates it voids or limits (the first screen words them, the attestations obey them)."""

from __future__ import annotations

from pathlib import Path

from byog.analysis.caveats import caveats
from byog.analysis.summary import derive_summary, plan_of
from byog.schemas.bench import WakeEffect
from byog.schemas.plan import ComparisonPair
from byog.schemas.server import ServerRecord
from tests.support.bundles_kit import TINY
from tests.support.synthetic import make_run_dir

SERVERS = [ServerRecord(name="candidate"), ServerRecord(name="baseline")]


def test_a_clean_bundle_has_none_and_a_flagged_wake_effect_voids_validity_for_its_side(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path / "run", TINY)
    summary = derive_summary(run_dir)
    assert caveats(summary, SERVERS, plan_of(run_dir)) == []
    point = summary.bench.points[0].point_id
    effect = WakeEffect(server="candidate", point_id=point, woken_waves=4, continued_waves=4, ratio=0.9, flagged=True)
    summary.bench.wake_effects = [effect, effect.model_copy(update={"server": "baseline", "flagged": None})]
    [found] = caveats(summary, SERVERS, plan_of(run_dir))
    assert (found.kind, found.servers, found.voids, found.wake_effect) == (
        "wake effect",
        ("candidate",),
        ("validity",),
        effect,
    )
    assert found.undermines("validity", ["candidate", "baseline"])
    assert found.undermines("speed claim", ["candidate"]) and not found.undermines("speed claim", ["baseline"])
    assert not found.undermines("pair", ["candidate", "baseline"]) and not found.undermines("engine", ["candidate"])


def test_launch_conditions_and_an_invalid_point_each_name_what_they_undermine(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path / "run", TINY)
    summary = derive_summary(run_dir)
    summary.evals.verdicts = []
    summary.bench.points[0].valid = False
    declared = ComparisonPair(candidate="candidate", baseline="baseline", baseline_is_stock=False)
    plan = plan_of(run_dir).model_copy(update={"pairs": [declared]})
    servers = [
        ServerRecord(name="candidate", argv=["vllm", "serve", "m", "--load-format", "dummy"]),
        ServerRecord(
            name="baseline",
            argv=["vllm", "serve", "m", "--speculative-config", '{"rejection_sample_method": "synthetic"}'],
        ),
    ]
    found = {c.kind: c for c in caveats(summary, servers, plan)}
    invalid_side = summary.bench.points[0].server
    assert list(found) == [
        "synthetic acceptance",
        "dummy weights",
        "accuracy not checked",
        "invalid point",
        "invalid on one side",
        "baseline not stock",
    ]
    assert found["dummy weights"].servers == ("candidate",) and found["dummy weights"].voids == ("accuracy",)
    assert found["synthetic acceptance"].limits == ("pair", "speed claim")
    assert found["invalid point"].voids == ("validity",) and found["invalid point"].servers == (invalid_side,)
    assert found["invalid on one side"].one_side == ((summary.bench.points[0].point_id, invalid_side),)
    assert found["accuracy not checked"].voids == found["accuracy not checked"].limits == ()
    assert found["baseline not stock"].undermines("pair", ["candidate", "baseline"])
    assert not found["baseline not stock"].undermines("validity", ["candidate", "baseline"])
