"""The numerics differential's formulas on hand-computed cases (byog/analysis/numerics.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from byog.analysis import numerics as nm


def _kl(y: int, p_top: dict[int, float], p_y: float, q_top: dict[int, float], q_y: float) -> float:
    """kl for one position from probabilities (not logprobs), k = len(p_top)."""
    k = len(p_top)
    a_ids, a_lp = nm.sort_top({i: math.log(v) for i, v in p_top.items()}, k)
    b_ids, b_lp = nm.sort_top({i: math.log(v) for i, v in q_top.items()}, k)
    out = nm.kl_shared_support(
        np.array([y]),
        np.array([math.log(p_y)]),
        np.array([a_ids]),
        np.array([a_lp]),
        np.array([math.log(q_y)]),
        np.array([b_ids]),
        np.array([b_lp]),
    )
    return float(out[0])


def test_kl_is_zero_for_identical_answers() -> None:
    top = {10: 0.5, 11: 0.3}
    assert _kl(10, top, 0.5, top, 0.5) == pytest.approx(0.0, abs=1e-15)


def test_kl_full_overlap_by_hand() -> None:
    # S = {10, 11}; p = (.5, .3), q = (.4, .4); residuals .2 and .2
    # .5 ln(.5/.4) + .3 ln(.3/.4) + .2 ln(.2/.2) = 0.111572 - 0.086305 = 0.025267
    got = _kl(10, {10: 0.5, 11: 0.3}, 0.5, {10: 0.4, 11: 0.4}, 0.4)
    assert got == pytest.approx(0.5 * math.log(0.5 / 0.4) + 0.3 * math.log(0.3 / 0.4), rel=1e-12)
    assert got == pytest.approx(0.025267, abs=1e-6)


def test_kl_partial_overlap_lumps_the_rest_into_the_residual() -> None:
    # S = {10}; p = .5, q = .6; r_P = .5, r_Q = .4: .5 ln(.5/.6) + .5 ln(.5/.4) = 0.020411
    got = _kl(10, {10: 0.5, 11: 0.3}, 0.5, {10: 0.6, 12: 0.3}, 0.6)
    assert got == pytest.approx(0.5 * math.log(0.5 / 0.6) + 0.5 * math.log(0.5 / 0.4), rel=1e-12)
    assert got == pytest.approx(0.020411, abs=1e-6)


def test_kl_counts_the_reference_token_outside_both_top_k() -> None:
    # y = 13 is in neither top-2 but both report it: S = {10, 11, 13}
    # p = (.5, .3, .1), q = (.5, .3, .05); r_P = .1, r_Q = .15: .1 ln 2 + .1 ln(.1/.15) = 0.028768
    got = _kl(13, {10: 0.5, 11: 0.3}, 0.1, {10: 0.5, 11: 0.3}, 0.05)
    assert got == pytest.approx(0.1 * math.log(2) + 0.1 * math.log(0.1 / 0.15), rel=1e-12)


def test_kl_floors_an_empty_other_residual() -> None:
    # Q puts all its mass on S: r_Q = 0 -> floored, so the residual term is .2 ln(.2 / 1e-12), finite
    got = _kl(10, {10: 0.5, 11: 0.3}, 0.5, {10: 0.7, 11: 0.3}, 0.7)
    expected = 0.5 * math.log(0.5 / 0.7) + 0.2 * math.log(0.2 / nm.RESIDUAL_FLOOR)
    assert got == pytest.approx(expected, rel=1e-9)


def test_kl_estimate_is_a_lower_bound_of_the_true_kl() -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        vocab, k = 50, 5
        p = rng.dirichlet(np.full(vocab, 0.3))
        q = p * np.exp(rng.normal(0, rng.choice([0.01, 0.3, 2.0]), vocab))
        q /= q.sum()
        true_kl = float(np.sum(p * (np.log(p) - np.log(q))))
        y = int(rng.integers(vocab))
        a = np.argsort(-p, kind="stable")[:k]
        b = np.argsort(-q, kind="stable")[:k]
        est = nm.kl_shared_support(
            np.array([y]),
            np.log(p[[y]]),
            a[None, :],
            np.log(p[a])[None, :],
            np.log(q[[y]]),
            b[None, :],
            np.log(q[b])[None, :],
        )[0]
        assert -1e-12 <= est <= true_kl + 1e-12


def test_topk_overlap_and_argmax() -> None:
    ref = nm.PassArrays.from_rows(
        [
            {
                "prompt": "a",
                "position": 5,
                "token": 1,
                "logprob": -0.1,
                "top_ids": [1, 2, 3],
                "top_logprobs": [-0.1, -2, -3],
            },
            {
                "prompt": "a",
                "position": 6,
                "token": 2,
                "logprob": -0.5,
                "top_ids": [2, 9, 3],
                "top_logprobs": [-0.5, -1, -3],
            },
        ]
    )
    other = nm.PassArrays.from_rows(
        [
            {
                "prompt": "a",
                "position": 6,
                "token": 2,
                "logprob": -0.9,
                "top_ids": [9, 2, 4],
                "top_logprobs": [-0.6, -0.9, -3],
            },
            {
                "prompt": "a",
                "position": 5,
                "token": 1,
                "logprob": -0.1,
                "top_ids": [1, 3, 7],
                "top_logprobs": [-0.1, -2, -3],
            },
        ]
    )
    m = nm.compare_positions(ref, other)
    assert m.position.tolist() == [5, 6]
    assert m.argmax_agree.tolist() == [True, False]
    assert m.topk_overlap.tolist() == pytest.approx([2 / 3, 2 / 3])
    assert m.abs_dlogprob.tolist() == pytest.approx([0.0, 0.4])


def test_positions_with_a_different_token_are_not_compared() -> None:
    row = {"prompt": "a", "position": 5, "token": 1, "logprob": -0.1, "top_ids": [1], "top_logprobs": [-0.1]}
    ref = nm.PassArrays.from_rows([row])
    other = nm.PassArrays.from_rows([{**row, "token": 2}])
    assert len(nm.compare_positions(ref, other)) == 0


def test_sort_top_breaks_ties_by_lower_id() -> None:
    assert nm.sort_top({7: -1.0, 3: -1.0, 5: -0.5}, 2) == ([5, 3], [-0.5, -1.0])


def test_first_divergence() -> None:
    assert nm.first_divergence([1, 2, 3], [1, 2, 3]) is None
    assert nm.first_divergence([1, 2, 3], [1, 2]) is None  # a shorter output is not a divergence
    assert nm.first_divergence([1, 2, 3], [1, 5, 3]) == 1
    assert nm.first_divergence([4], [1]) == 0


def test_generate_rows_are_compared_only_before_the_divergence() -> None:
    def gen(tokens: list[int]) -> nm.PassArrays:
        return nm.PassArrays.from_rows(
            [
                {"prompt": "p", "position": 10 + i, "token": t, "logprob": -1.0, "top_ids": [t], "top_logprobs": [-1.0]}
                for i, t in enumerate(tokens)
            ]
        )

    ref, other = gen([1, 2, 3, 4]), gen([1, 2, 7, 4])
    found = nm.divergences(ref, other)
    assert found == {"p": 2}
    assert nm.before_divergence(ref, found).position.tolist() == [10, 11]
    assert nm.divergence_stats({"p": 2, "q": None, "r": 6}) == {
        "prompts": 3,
        "diverged": 2,
        "earliest": 2,
        "median": 4.0,
    }


@pytest.mark.parametrize(
    "position,start", [(0, 0), (63, 0), (64, 64), (127, 64), (128, 128), (1000, 512), (2047, 1024), (32768, 32768)]
)
def test_log2_buckets(position: int, start: int) -> None:
    assert nm.bucket_start(position) == start
    assert position < nm.bucket_end(start)


def _bucket(start: int, n: int = 100, dlp: float = 0.01, kl: float = 1e-4, agree: float = 1.0) -> dict[str, object]:
    return {
        "bucket": nm.bucket_label(start),
        "start": start,
        "positions": n,
        "mean_abs_dlogprob": dlp,
        "mean_kl": kl,
        "argmax_agreement": agree,
    }


def test_verdict_equivalent_within_the_envelope() -> None:
    aa = [_bucket(0), _bucket(64)]
    cand = [_bucket(0, dlp=0.019, kl=1.9e-4), _bucket(64, dlp=0.005)]
    assert nm.verdict(cand, aa) == ("numerically equivalent", [])


def test_verdict_drifts_past_the_envelope_in_one_bucket() -> None:
    aa = [_bucket(0), _bucket(64)]
    verdict, reasons = nm.verdict([_bucket(0), _bucket(64, kl=3e-4)], aa)
    assert verdict == "drifts"
    assert reasons == ["positions 64-127: 3 envelopes (mean |Δlogprob| 0.01, mean KL 0.0003) > 2"]


def test_verdict_floor_applies_when_the_aa_run_is_exact() -> None:
    aa = [_bucket(0, dlp=0.0, kl=0.0)]
    assert nm.verdict([_bucket(0, dlp=0.0009, kl=9e-6)], aa)[0] == "numerically equivalent"
    assert nm.verdict([_bucket(0, dlp=0.0011, kl=0.0)], aa)[0] == "drifts"


def test_verdict_diverges_on_kl_only() -> None:
    aa = [_bucket(0, agree=0.99)]
    verdict, reasons = nm.verdict([_bucket(0, kl=0.2)], aa)
    assert verdict == "diverges" and reasons[0] == "positions 0-63: mean KL 0.2 nats > 0.1"
    # argmax flips at near-ties are reported, not judged: a candidate that only flips ties drifts at most
    assert nm.verdict([_bucket(0, agree=0.85)], aa)[0] == "numerically equivalent"


def test_verdict_skips_thin_buckets() -> None:
    aa = [_bucket(0), _bucket(2048, n=3)]
    assert nm.verdict([_bucket(0), _bucket(2048, n=3, kl=5.0)], aa)[0] == "numerically equivalent"


def test_the_envelope_is_the_larger_of_the_aa_and_the_variant_noise() -> None:
    aa = [_bucket(0, dlp=0.001, kl=1e-5), _bucket(64, dlp=0.001, kl=1e-5)]
    variant = [_bucket(0, dlp=0.01, kl=1e-4), _bucket(64, dlp=0.0, kl=0.0)]
    cand = [_bucket(0, dlp=0.015, kl=1.5e-4), _bucket(64, dlp=0.0015, kl=1.5e-5)]
    # within 2 envelopes of the variant's noise in 0-63, of the A/A's in 64-127
    assert nm.verdict(cand, aa, variant) == ("numerically equivalent", [])
    assert nm.verdict(cand, aa)[0] == "drifts"
    d = nm.distances(cand, aa, variant)
    assert [round(x["distance"], 6) for x in d] == [1.5, 1.5] and all(x["judged"] for x in d)
    assert d[0]["envelope_abs_dlogprob"] == 0.01 and d[1]["envelope_kl"] == 1e-5


def test_a_thin_variant_bucket_is_not_judged() -> None:
    aa, variant = [_bucket(0)], [_bucket(0, n=3)]
    assert not nm.distances([_bucket(0, kl=1.0)], aa, variant)[0]["judged"]
    assert nm.verdict([_bucket(0, kl=1.0)], aa, variant)[0] == "numerically equivalent"


def test_head_ratio_is_one_for_a_uniform_distribution() -> None:
    lp = np.log(np.full((4, 5), 1 / 49152))
    flat = nm.PassArrays(
        np.array(["a"] * 4, dtype=object),
        np.arange(4),
        np.zeros(4, dtype=np.int64),
        lp[:, 0],
        np.tile(np.arange(5), (4, 1)),
        lp,
    )
    assert nm.head_ratio(flat) == pytest.approx(1.0)
    assert nm.mean_top1_prob(flat) == pytest.approx(1 / 49152)
    peaked = flat.take(np.arange(4))
    peaked.top_logprobs[:, 0] = np.log(0.5)
    assert nm.head_ratio(peaked) == pytest.approx(0.5 * 49152)
