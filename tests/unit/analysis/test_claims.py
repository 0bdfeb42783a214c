"""A claim holds only on a number worth trusting: at a point flagged invalid it is "not checked:
invalid point", for verify (a failure) and for the report's headline alike."""

from __future__ import annotations

import pytest

from byog.analysis.claims import INVALID_POINT, ClaimNotChecked, check_claim, evaluate_claim
from byog.analysis.summary import derive_summary
from byog.core.errors import CheckFailed
from byog.schemas.claims import RatioClaim, ValueClaim
from byog.schemas.summary import Summary
from tests.support.synthetic import SyntheticSpec, make_run_dir


@pytest.fixture(scope="module")
def summary(tmp_path_factory: pytest.TempPathFactory) -> Summary:
    spec = SyntheticSpec(batch_sizes=(1,), isl=4, osl=8, warmup_waves=0, waves=2, eval_items=4, log_lines=3)
    return derive_summary(make_run_dir(tmp_path_factory.mktemp("claims") / "run", spec))


def _ratio(summary: Summary) -> RatioClaim:
    candidate = next(p for p in summary.bench.points if p.server == "candidate")
    baseline = next(p for p in summary.bench.points if p.server == "baseline" and p.point_id == candidate.point_id)
    assert candidate.metrics and baseline.metrics and candidate.metrics.decode_tok_s and baseline.metrics.decode_tok_s
    value = candidate.metrics.decode_tok_s / baseline.metrics.decode_tok_s
    return RatioClaim(
        kind="ratio", name="speed-up", candidate="candidate", baseline="baseline", point=candidate.point_id,
        metric="decode_tok_s", value=value,
    )  # fmt: skip


def _flag_invalid(summary: Summary, server: str) -> Summary:
    flagged = summary.model_copy(deep=True)
    flagged.bench.points = [
        p.model_copy(update={"valid": False, "invalid_reasons": ["1 requests returned n_out != OSL 8 (7)"]})
        if p.server == server
        else p
        for p in flagged.bench.points
    ]
    return flagged


def test_a_ratio_claim_holds_at_a_valid_point(summary: Summary) -> None:
    claim = _ratio(summary)
    assert "speed-up" in check_claim(summary, claim)
    assert evaluate_claim(summary, claim).outcome == "holds"


@pytest.mark.parametrize("side", ["candidate", "baseline"])
def test_a_ratio_claim_at_an_invalid_point_is_not_checked_and_never_holds(summary: Summary, side: str) -> None:
    claim = _ratio(summary)
    flagged = _flag_invalid(summary, side)
    with pytest.raises(ClaimNotChecked, match=INVALID_POINT) as raised:
        check_claim(flagged, claim)
    assert isinstance(raised.value, CheckFailed) and "n_out != OSL" in str(raised.value)  # verify: a failed claim
    outcome = evaluate_claim(flagged, claim)
    assert (outcome.outcome, outcome.got) == ("not checked", "invalid point")


def test_a_value_claim_at_an_invalid_point_is_not_checked(summary: Summary) -> None:
    ratio = _ratio(summary)
    claim = ValueClaim(server="candidate", point=ratio.point, metric="decode_tok_s", value=1.0, tolerance=1.0)
    with pytest.raises(ClaimNotChecked, match=INVALID_POINT):
        check_claim(_flag_invalid(summary, "candidate"), claim)
