"""byog.analysis.special against scipy.special (what byog computed with before) and mpmath.

The grids are the ranges byog uses: Beta(mu k, (1 - mu) k) quantiles at the GRID = 256 midpoints
(the task priors' shapes 0.25..1.5, fitted ones from 0.05 to 1000), chi-square quantiles for
nu = 1..1e6 (power.py's Satterthwaite nu, with its 1e6 fallback), the chi-square survival
function at small dof; plus tails. Then the planned power itself, against a copy of the
scipy-based formulas it replaced, within what ``byog verify`` tolerates (1e-9 relative or 1e-12
absolute) and much closer."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from byog.analysis import conformance_stats as conformance
from byog.analysis import gate_power as power
from byog.analysis import special
from byog.bundles.checks.recompute import FLOAT_ABS_TOL
from byog.plans.tasks import TASKS

sc = pytest.importorskip("scipy.special")

MIDPOINTS = (np.arange(power.GRID) + 0.5) / power.GRID
SHAPES = [0.05, 0.1, 0.2, 0.25, 0.4, 0.5, 0.6, 0.75, 1.0, 1.5, 2.0, 5.0, 10.0, 50.0, 200.0, 1000.0]
TAILS = np.array([1e-100, 1e-20, 1e-10, 1e-5, 1 - 1e-5, 1 - 1e-10, 1 - 1e-15])


def relative(ours: np.ndarray, theirs: np.ndarray, floor: float = 1e-290) -> float:
    """The largest relative difference where scipy's value is above ``floor``."""
    ours, theirs = np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float)
    keep = np.abs(theirs) > floor
    if not keep.any():
        return 0.0
    return float(np.max(np.abs(ours[keep] - theirs[keep]) / np.abs(theirs[keep])))


def test_beta_quantiles_match_scipy() -> None:
    worst = 0.0
    u = np.concatenate([MIDPOINTS, TAILS])
    for a in SHAPES:
        for b in SHAPES:
            worst = max(worst, relative(special.betaincinv(a, b, u), sc.betaincinv(a, b, u)))
    print(f"worst relative difference of Beta quantiles from scipy: {worst:.1e}")
    assert worst <= 1e-12


def test_beta_quantiles_of_tiny_shapes_are_as_good_as_their_condition() -> None:
    """For a << 1, x ~ (u a B)^(1/a): a relative error e in I_x moves x by e / a, and log I is
    held to ~1e-15; so ~2e-14 / a (scipy, working in linear space there, does better)."""
    for a in (0.002, 0.01, 0.02):
        for b in (0.5, 5.0, 500.0):
            ours, theirs = special.betaincinv(a, b, MIDPOINTS), sc.betaincinv(a, b, MIDPOINTS)
            assert relative(ours, theirs) <= 5e-14 / a, (a, b)


def test_beta_quantile_edges() -> None:
    out = special.betaincinv(0.5, 2.0, [0.0, 1.0, np.nan, 0.5])
    assert out[0] == 0.0 and out[1] == 1.0 and math.isnan(out[2]) and 0 < out[3] < 1
    assert special.betaincinv(0.2, 50.0, [1e-300])[0] == 0.0  # the quantile underflows (1e-1500)


def test_beta_cdf_matches_scipy() -> None:
    worst = 0.0
    for a in SHAPES:
        for b in SHAPES:
            x = np.concatenate([sc.betaincinv(a, b, MIDPOINTS), [1e-300, 1e-30, 1e-3, 0.5, 1 - 1e-3]])
            worst = max(worst, relative(special.betainc(a, b, x), sc.betainc(a, b, x)))
    print(f"worst relative difference of I_x(a, b) from scipy: {worst:.1e}")
    assert worst <= 1e-12


NUS = [1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 25.0, 50.0, 100.0, 199.0, 200.0, 201.0, 250.0, 1000.0, 5000.0, 2e4, 2e5, 1e6]


def test_chi_square_quantiles_match_scipy() -> None:
    """What power.py asks: gammaincinv(nu / 2, midpoints), nu from ~1 to the 1e6 fallback."""
    worst = 0.0
    for nu in NUS:
        worst = max(worst, relative(special.gammaincinv(nu / 2, MIDPOINTS), sc.gammaincinv(nu / 2, MIDPOINTS)))
    print(f"worst relative difference of chi-square quantiles from scipy: {worst:.1e}")
    assert worst <= 1e-12


def test_gamma_quantiles_and_tails_match_scipy() -> None:
    worst = 0.0
    for s in (0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 3.0, 20.0, 99.0, 100.5, 150.0, 2500.0):
        u = np.concatenate([MIDPOINTS, TAILS])
        worst = max(worst, relative(special.gammaincinv(s, u), sc.gammaincinv(s, u)))
        x = np.concatenate([sc.gammaincinv(s, u), [1e-200, 1e-5, 0.5 * s, 3 * s + 30]])
        worst = max(worst, relative(special.gammainc(s, x), sc.gammainc(s, x)))
        worst = max(worst, relative(special.gammaincc(s, x), sc.gammaincc(s, x)))
    print(f"worst relative difference of P, Q and their inverse from scipy: {worst:.1e}")
    assert worst <= 1e-12


def test_gamma_edges() -> None:
    assert list(special.gammaincinv(3.0, [0.0, 1.0])) == [0.0, math.inf]
    assert list(special.gammainc(3.0, [0.0, math.inf])) == [0.0, 1.0]
    assert list(special.gammaincc(3.0, [0.0, math.inf])) == [1.0, 0.0]


def test_chi_square_survival_matches_chdtrc() -> None:
    worst = 0.0
    for dof in (*range(1, 31), 50, 100, 400):
        for stat in (0.0, 1e-8, 0.01, 0.5, 1.0, dof / 2, dof - 1, dof, dof + 1, 2 * dof, 5 * dof + 20, 40 * dof + 1000):
            ours, theirs = special.chi2_sf(dof, stat), float(sc.chdtrc(dof, stat))
            if theirs > 1e-290:
                worst = max(worst, abs(ours - theirs) / theirs)
    print(f"worst relative difference of chi-square p-values from scipy: {worst:.1e}")
    assert worst <= 1e-12


def test_conformance_p_value_unchanged() -> None:
    result = conformance.chi_square({1: 0.6, 2: 0.3, 3: 0.02}, {1: 58, 2: 31, 3: 4, 9: 7})
    assert math.isclose(result["p_value"], float(sc.chdtrc(result["dof"], result["chi2"])), rel_tol=1e-13)


def _mp_root(mp, cdf, density, u: float, x: float):
    """x with cdf(x) = u (u as the double it is), by Newton at 30 digits from a close start."""
    x = mp.mpf(x)
    for _ in range(20):
        x -= (cdf(x) - mp.mpf(u)) / density(x)
    return x


def test_against_mpmath() -> None:
    """A few values at 30 digits, among them where scipy itself is off (the lower tail of a large
    shape: ~1e-10 relative at s ~ 1e6)."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 30
    for a, b, x in (
        (0.25, 0.75, 0.3),
        (1.5, 0.5, 0.999),
        (50.0, 50.0, 0.4),
        (0.75, 1000.0, 1e-4),
        (1000.0, 0.5, 0.9995),
    ):
        lower = mp.betainc(a, b, 0, x, regularized=True)
        assert math.isclose(special.betainc(a, b, [x])[0], float(lower), rel_tol=1e-13)
        u = float(lower)
        exact = _mp_root(
            mp,
            lambda t: mp.betainc(a, b, 0, t, regularized=True),
            lambda t: t ** (a - 1) * (1 - t) ** (b - 1) / mp.beta(a, b),
            u,
            x,
        )
        assert math.isclose(special.betaincinv(a, b, [u])[0], float(exact), rel_tol=1e-13), (a, b, x)
    for s, x in ((0.5, 0.01), (0.5, 3.0), (7.5, 30.0), (150.0, 140.0), (5e5, 4.99e5), (1.2e6, 1.19e6), (1e3, 1.06e3)):
        lower, upper = mp.gammainc(s, 0, x, regularized=True), mp.gammainc(s, x, mp.inf, regularized=True)
        assert math.isclose(special.gammainc(s, [x])[0], float(lower), rel_tol=1e-13)
        assert math.isclose(special.gammaincc(s, [x])[0], float(upper), rel_tol=1e-13)
        u = float(lower) if lower < 0.5 else 1.0 - float(upper)  # the quantile of u as a double
        exact = _mp_root(
            mp,
            lambda t: mp.gammainc(s, 0, t, regularized=True),
            lambda t: mp.exp((s - 1) * mp.log(t) - t - mp.loggamma(s)),
            u,
            x,
        )
        assert math.isclose(special.gammaincinv(s, [u])[0], float(exact), rel_tol=1e-14), (s, x)


def test_small_functions_match_scipy() -> None:
    k = np.arange(0, 100_000)
    # to the bit: the exact planned-power method amplifies an ulp of log n! (special.log_factorial)
    assert np.array_equal(special.log_factorial(k), sc.gammaln(k + 1.0))
    assert np.array_equal(special.log_factorial(k.astype(float)[::-7]), sc.gammaln(k[::-7] + 1.0))
    rng = np.random.default_rng(3)
    x = rng.integers(0, 64, 5000).astype(float)
    y = np.concatenate([rng.random(4990), [0.0, 1.0, 1e-300, 0.5, 0.25, 1e-20, 1 - 1e-16, 0.75, 0.125, 0.0]])
    assert np.array_equal(special.xlogy(x, y), sc.xlogy(x, y))  # libm's log, as scipy's
    ours, theirs = special.xlog1py(x, -y), sc.xlog1py(x, -y)  # scipy's uses cephes' log1p: an ulp apart at times
    assert (
        np.array_equal(np.isfinite(ours), np.isfinite(theirs))
        and relative(ours[np.isfinite(ours)], theirs[np.isfinite(theirs)]) <= 1e-15
    )
    for zero in (0.0, 1.0, -1.0):
        assert special.xlogy(0.0, zero) == 0.0 and special.xlog1py(0.0, zero - 1.0) == 0.0
    z = np.concatenate([np.linspace(-8, 9, 2001), [0.0, -1e-300, 1e-300, 0.7, -0.7]])
    assert relative(special.ndtr(z), sc.ndtr(z)) <= 5e-15  # libm erf/erfc against cephes
    # the far tail: both round x / sqrt(2) first, worth 2 z^2 1.1e-16 (~2e-13 from the truth at x = -37)
    z = np.linspace(-37.5, -8, 500)
    assert relative(special.ndtr(z), sc.ndtr(z)) <= 1e-12


def test_stirling_correction_against_mpmath() -> None:
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 30
    for z in (0.01, 0.05, 0.3, 1.0, 2.5, 6.4, 6.99, 7.0, 9.5, 30.0, 1e4):
        exact = mp.loggamma(z) - ((mp.mpf(z) - 0.5) * mp.log(z) - z + mp.log(2 * mp.pi) / 2)
        assert abs(special.stirling_correction(z) - float(exact)) <= 2e-15, z


# --- the planned power, against the scipy-based formulas it replaced --------------------------------


def _reference_nodes(self: power.ItemModel) -> np.ndarray:
    if self.accuracy <= 0.0 or self.accuracy >= 1.0:
        return np.full(power.GRID, float(self.accuracy))
    a, b = self.accuracy * self.concentration, (1 - self.accuracy) * self.concentration
    return np.asarray(sc.betaincinv(a, b, MIDPOINTS), dtype=float)


def _reference_binom_pmf(k: int, p: np.ndarray) -> np.ndarray:
    x, q = np.arange(k + 1)[None, :], p[:, None]
    return np.exp(
        sc.gammaln(k + 1) - sc.gammaln(x + 1) - sc.gammaln(k - x + 1) + sc.xlogy(x, q) + sc.xlog1py(k - x, -q)
    )


def _reference_exact(step: float, p_down: float, p_up: float, n: int, margin: float, resolution: float) -> float:
    if n < 2:
        return 0.0
    p_zero = max(0.0, 1.0 - p_down - p_up)
    a = power._count_range(n, p_up)[:, None]
    b = power._count_range(n, p_down)[None, :]
    ok = a + b <= n
    aa, bb = np.broadcast_arrays(a, b)
    aa, bb = aa[ok].astype(float), bb[ok].astype(float)
    zz = n - aa - bb
    with np.errstate(divide="ignore"):
        logs = (
            sc.gammaln(n + 1)
            - sc.gammaln(aa + 1)
            - sc.gammaln(bb + 1)
            - sc.gammaln(zz + 1)
            + sc.xlogy(aa, p_up)
            + sc.xlogy(bb, p_down)
            + sc.xlogy(zz, p_zero)
        )
    prob = np.exp(logs)
    d = step * (aa - bb) / n
    var = np.clip((step * step * (aa + bb) - n * d * d) / (n - 1), 0, None)
    se = np.where((aa + bb == 0) | (aa == n) | (bb == n), resolution / n, np.sqrt(var / n))
    eq = (np.abs(d) + power._t95(n) * se) < margin
    return float(np.clip(prob[eq].sum(), 0.0, 1.0))


def _reference_normal(values: np.ndarray, probs: np.ndarray, n: int, margin: float, resolution: float) -> float:
    if n < 2:
        return 0.0
    mu = float(np.dot(values, probs))
    var = float(np.dot((values - mu) ** 2, probs))
    t = power._t95(n)
    p_const = float(np.sum(probs**n))
    const = float(np.sum((probs**n)[np.abs(values) + t * resolution / n < margin]))
    if var <= 0:
        return const
    mu4 = float(np.dot((values - mu) ** 4, probs))
    var_s2 = mu4 / n - var * var * (n - 3) / (n * (n - 1))
    nu = 2 * var * var / var_s2 if var_s2 > 0 else 1e6
    se = np.sqrt(var * (2.0 * sc.gammaincinv(nu / 2.0, MIDPOINTS)) / nu / n)
    tau = math.sqrt(var / n)
    half = margin - t * se
    inner = np.where(half > 0, sc.ndtr((half - mu) / tau) - sc.ndtr((-half - mu) / tau), 0.0)
    return const + (1 - p_const) * float(inner.mean())


def _designs() -> list[tuple[power.ItemModel, int, int, bool, float]]:
    models = [m for m in (power.prior_model(task) for task in TASKS) if m is not None]
    models += [
        power.ItemModel(0.3, 20.0),
        power.ItemModel(0.9, 200.0),
        power.ItemModel(0.02, 3.0),
    ]  # as --from-run fits
    designs = []
    for model in models:
        for n in (10, 30, 198, 440, 1319, 2000):
            for margin in (1.0, 3.0, 10.0):
                designs.append((model, n, 1, False, margin))
                designs += [(model, n, k, True, margin) for k in (1, 2, 4, 10, 16)]
    return designs


def test_planned_power_matches_the_scipy_computation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every number of ``planned_power`` within 1e-10 relative of the scipy-based computation, or
    within verify's absolute 1e-12 (its relative tolerance is 1e-9): the exact method's false-fail
    rate is 1 - (a sum ~ 1 of terms whose logs are ~1e4, with p_zero = 1 - p_down - p_up raised to
    the power ~n), so the last bit of its inputs (here Beta quantiles an ulp from Boost's) moves it
    by up to ~4e-13 at n = 2000, however small it is."""
    designs = _designs()
    ours = [power.planned_power(*design) for design in designs]
    monkeypatch.setattr(power.ItemModel, "nodes", _reference_nodes)
    monkeypatch.setattr(power, "_binom_pmf", _reference_binom_pmf)
    monkeypatch.setattr(power, "prob_equivalent_exact", _reference_exact)
    monkeypatch.setattr(power, "prob_equivalent_normal", _reference_normal)
    theirs = [power.planned_power(*design) for design in designs]
    worst_relative = worst_absolute = 0.0
    for design, mine, reference in zip(designs, ours, theirs):
        assert mine.method == reference.method and mine.sound == reference.sound, design
        for name in ("false_fail", "power", "sd_item"):
            x, y = getattr(mine, name), getattr(reference, name)
            assert math.isclose(x, y, rel_tol=1e-10, abs_tol=FLOAT_ABS_TOL), (design, name, x, y)
            worst_absolute = max(worst_absolute, abs(x - y))
            if abs(y) > 1e-3:
                worst_relative = max(worst_relative, abs(x - y) / abs(y))
    print(
        f"{len(designs)} designs: worst relative difference {worst_relative:.1e} (values > 1e-3), "
        f"worst absolute {worst_absolute:.1e}"
    )


def test_the_1e6_fallback_matches_scipy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two values +-s with equal mass: kurtosis 1, Var(s^2) <= 0, so nu = 1e6 (s = 5e5)."""
    values, probs = np.array([-100.0, 100.0]), np.array([0.5, 0.5])
    for n, margin in ((30, 150.0), (200, 110.0), (2000, 104.0)):
        ours = power.prob_equivalent_normal(values, probs, n, margin, 100.0)
        assert math.isclose(ours, _reference_normal(values, probs, n, margin, 100.0), rel_tol=1e-12)


def test_power_and_conformance_import_no_scipy() -> None:
    probe = (
        "import sys\n"
        "from byog.analysis import conformance_stats as conformance, gate_power as power\n"
        "model = power.prior_model('aime25')\n"
        "power.planned_power(model, 30, 16, True, 5.0)\n"
        "power.planned_power(power.prior_model('gsm8k'), 1319, 1, False, 3.0)\n"
        "conformance.chi_square({1: 0.6, 2: 0.4}, {1: 55, 2: 45})\n"
        "print('LOADED', sorted(m for m in sys.modules if m == 'scipy' or m.startswith('scipy.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert "LOADED []" in out, out
