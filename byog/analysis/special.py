"""Special functions in Python and numpy: what byog.analysis used scipy.special for.

Why: importing ``scipy.special`` costs ~0.17 s, most of what ``byog verify`` spends before it
reads a bundle, and verify recomputes the planned power (byog.analysis.gate_power) and conformance
p-values (byog.analysis.conformance_stats) that bundles ship, computed with scipy by older versions and
compared at 1e-9 relative (or 1e-12 absolute). These agree with scipy.special to ~1e-13 relative
over the ranges byog uses (tests/unit/analysis/test_special.py holds them against scipy and
30-digit mpmath values); each takes a few ms on the 256 values of a power grid.

Pieces shared with byog.analysis.student_t:
- Stirling: lgamma(z) = (z - 1/2) log z - z + log(2 pi)/2 + omega(z), omega(z) ~ sum_k B_2k / (2k (2k-1) z^(2k-1))
  (9 terms for z >= 7, below by the recurrence of Gamma): ~5e-16 absolute. The prefactors below are
  written with omega, so that no difference of two large lgammas (or of s log x and x) loses digits.
- log1pmx(t) = log(1 + t) - t, for |t| <= 1/4 as -t r + 2 r^3 (1/3 + r^2/5 + ... + r^20/23), r = t / (2 + t)
  (the atanh series of log1p), which has no cancellation; elsewhere log(1 + t) - t from the caller's log.
- the continued fraction of the incomplete beta function (modified Lentz), Gauss-Legendre nodes,
  a normal quantile good enough to start Newton.

Regularized incomplete beta function, y = 1 - x (each held to its own relative precision):
    I_x(a, b) = x^a y^b / (B(a, b) F)   (F: ``beta_fraction``, the even part of the classical fraction)
for x < (a + 1) / (a + b + 2), where the fraction converges fast; beyond, I_x(a, b) = 1 - I_y(b, a).
The prefactor, with x0 = a / (a + b), y0 = 1 - x0, delta = x - x0:
    log(x^a y^b / B(a, b)) = a log1pmx(delta / x0) + b log1pmx(-delta / y0)
                             + log(a b / (a + b)) / 2 - log(2 pi) / 2 + omega(a + b) - omega(a) - omega(b)
Its inverse, the Beta quantile (``betaincinv``): Newton on log I (u <= 1/2) or on log(1 - I) (u > 1/2)
in t = log(x / y), with d log I / dt = x^a y^b / (B(a, b) I). The logit of a Beta variable has a
log-concave density (a log x + b log y is concave in t), so log I and log(1 - I) are concave in t
and Newton converges from any start, monotonically after at most one step past the root, with no
bracket to keep; near the root the step is Halley's (``_invert``). The step x <- x e^dt / (y + x e^dt),
y <- y / (y + x e^dt) keeps both to full relative precision, x ~ 1e-300 or y ~ 1e-17 alike. Start:
A&S 26.5.22 (a, b >= 1) or the power-law tails x = (a w u)^(1/a), y = (b w (1 - u))^(1/b)
(Numerical Recipes' invbetai). Accuracy: log I is held to ~1e-15 absolute, so x to ~1e-15 I / (x dI/dx):
for a < 1, up to ~2e-14 / a in the lower tail, where x ~ (a B u)^(1/a) (7e-14 at a = 0.05, 5e-12 at 0.004).

Regularized incomplete gamma functions P(s, x) and Q = 1 - P, with
    front = x^s e^-x / Gamma(s) = exp(s log1pmx(x / s - 1) + log(s / (2 pi)) / 2 - omega(s)):
- s <= 100: P = front / s * sum_n x^n / ((s + 1)...(s + n)) for x < s + 1, else
  Q = front / (x + 1 - s - 1 (1 - s) / (x + 3 - s - 2 (2 - s) / (x + 5 - s - ...))) (Lentz);
  the other one as 1 - that (for s < 1 that costs Q up to ~4e-14 relative where it is small but x < s + 1);
- s > 100, where those need ~sqrt(70 s) terms: with x = s e^w, y = w sqrt(s), phi(w) = e^w - 1 - w,
      P = e^-omega(s) / sqrt(2 pi) integral_{-inf}^{y0} exp(-s phi(y / sqrt(s))) dy,  y0 = sqrt(s) log(x / s)
  (Q: from y0 to inf where x > s) by 20-point Gauss-Legendre on 6 panels reaching to where the
  integrand has fallen by e^-42 from its value at y0 (s phi is convex: bounded by its tangent, by
  its curvature and, below, by phi(w) >= -1 - w). The integrand is entire and close to exp(-y^2 / 2);
  on panels of length <= 2.6 the rule is exact to ~1e-19. (scipy's own asymptotic series is off by
  up to ~1e-10 in the lower tail at s ~ 1e6; this is not.)
Its inverse (``gammaincinv``): Newton, then Halley, on log P or log Q in t = log x,
d log P / dt = front / P (the log of a Gamma variable has a log-concave density too), from
Wilson-Hilferty, x = s (1 - 1/(9 s) + z / (3 sqrt(s)))^3, z the normal quantile, or Numerical
Recipes' (u / c)^(1/s) start for s < 1.

Also: Phi(x) (``ndtr``) as cephes/scipy compute it, 1/2 + erf(x / sqrt 2) / 2 near 0, else erfc / 2,
by math.erf and math.erfc; xlogy and xlog1py with 0 log 0 = 0; log k! from a table rounded as
scipy's gammaln rounds it (``log_factorial`` says why); the chi-square survival function Q(dof / 2, x / 2).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

_EPS = 1e-16
_FRACTION_TOLERANCE = 3e-16
_TINY = 1e-300
_MAX_ITERATIONS = 400
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
# B_2k / (2k (2k - 1)), k = 1..9: the Stirling series of omega(z)
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156, -3617 / 122400, 43867 / 244188)
_STIRLING_FROM = 7.0
_LOG1PMX_SERIES = tuple(1.0 / (2 * k + 1) for k in range(1, 12))  # 1/3, 1/5, ..., 1/23
_NEWTON_TOLERANCE = 1e-11
_NEWTON_ITERATIONS = 100
_MAX_STEP = 20.0  # at most a factor e^20 (of the odds, or of x) per Newton step
_GAMMA_QUADRATURE_FROM = 100.0
_GAMMA_PANELS = 6
_GAUSS_ORDER = 20
_DECAY = 42.0  # the quadrature stops where exp(-s phi) has fallen by e^-42 from its value at y0

Array = Any  # a float or a numpy array of them


# --- shared pieces ------------------------------------------------------------------------------


def stirling_correction(z: float) -> float:
    """omega(z) = lgamma(z) - ((z - 1/2) log z - z + log(2 pi)/2), for z > 0, to ~5e-16 absolute.

    z >= 7: the Stirling series. Below, up by the recurrence Gamma(v + 1) = v Gamma(v):
    omega(v) = omega(v + 1) + (v + 1/2) log(1 + 1/v) - 1 = omega(v + 1) + atanh(r) / r - 1, r = 1 / (2v + 1),
    and atanh(r) / r - 1 = r^2 (1/3 + r^2/5 + ...), with no cancellation (math.lgamma's own error,
    up to ~4e-15 near z = 6, would otherwise pass straight into the prefactors)."""
    correction = 0.0
    while z < _STIRLING_FROM:
        r = 1.0 / (2.0 * z + 1.0)
        if r <= 1.0 / 7.0:
            r2 = r * r
            series = 0.0
            for coefficient in reversed(_LOG1PMX_SERIES):
                series = series * r2 + coefficient
            correction += r2 * series
        else:
            correction += math.atanh(r) / r - 1.0
        z += 1.0
    r2 = 1.0 / (z * z)
    total = 0.0
    for coefficient in reversed(_STIRLING):
        total = total * r2 + coefficient
    return correction + total / z


def _log1pmx(t: np.ndarray, log1p_t: np.ndarray) -> np.ndarray:
    """log(1 + t) - t; ``log1p_t`` (the caller's accurate log(1 + t)) is used only where |t| > 1/4."""
    small = np.abs(t) <= 0.25
    if not small.any():
        return log1p_t - t
    r = t / (2.0 + t)
    r2 = r * r
    largest = float(r2[small].max())  # as many terms as the largest r^2 needs (r^2n < 1e-17): 11 at |t| = 1/4
    terms = len(_LOG1PMX_SERIES) if largest >= 0.02 else max(1, math.ceil(-17.0 / math.log10(max(largest, 1e-300))))
    series = np.zeros_like(r2)
    for coefficient in reversed(_LOG1PMX_SERIES[:terms]):
        series = series * r2 + coefficient
    return np.where(small, -t * r + 2.0 * r * r2 * series, log1p_t - t)


def _log1mexp(v: np.ndarray) -> np.ndarray:
    """log(1 - e^v) for v <= 0, without cancellation at either end."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(v > -math.log(2.0), np.log(-np.expm1(v)), np.log1p(-np.exp(v)))


def _nonzero(v: Array) -> Array:
    """Lentz's guard: a denominator of (almost) zero becomes 1e-300."""
    if isinstance(v, np.ndarray):
        return np.where(np.abs(v) > _TINY, v, _TINY)
    return v if abs(v) > _TINY else _TINY


def _converged(step: Array) -> Array:
    """A fraction has converged when its last factor is within ~an ulp of 1 (a converged factor
    can stay 1 - 1.1e-16, the spacing of doubles below 1, for ever)."""
    return abs(step - 1.0) < _FRACTION_TOLERANCE


def _accumulate(result: Array, factor: Array, done: Array) -> tuple[Array, Array, bool]:
    """result * factor, except where an element has converged (arrays: multiplying it by factors
    that round to 1 +- an ulp would drift); the new done and whether every element is done."""
    if isinstance(factor, np.ndarray):
        result = np.where(done, result, result * factor)
        done = done | _converged(factor)
        return result, done, bool(done.all())
    return result * factor, done, bool(_converged(factor))


def _lentz(c: Array, d: Array, numerator: Array, denominator: Array = 1.0) -> tuple[Array, Array, Array]:
    """One term numerator / (denominator + ...) of a continued fraction (modified Lentz): new c, d
    and the factor the fraction's value is multiplied by."""
    d = 1.0 / _nonzero(denominator + numerator * d)
    c = _nonzero(denominator + numerator / c)
    return c, d, d * c


def beta_fraction(x: Array, y: Array, a: Array, b: Array, iterations: int = _MAX_ITERATIONS) -> Array:
    """The continued fraction F of I_x(a, b) = x^a y^b / (B(a, b) F), y = 1 - x (modified Lentz):

        F = beta_0 + alpha_1 / (beta_1 + alpha_2 / (beta_2 + ...)),  beta_0 = a (a y - b x + 1) / (a + 1),
        alpha_m = (a + m - 1)(a + b + m - 1) m (b - m) x^2 / (a + 2m - 1)^2,
        beta_m = m + m (b - m) x / (a + 2m - 1) + (a + m)(a y - b x + 1 + m (2 - x)) / (a + 2m + 1)

    (the even part of the classical fraction, as in TOMS 708's BFRAC and Boost: half the terms, and
    none of the near-cancelling denominators that cost the classical one ~1e-13 where a >> 1 > b).
    Floats, or numpy arrays elementwise (then until every element has converged). It converges
    fast for x < (a + 1) / (a + b + 2), in O(sqrt(max(a, b))) terms at worst."""

    def terms(m: int) -> tuple[Array, Array]:
        alpha = (a + m - 1) * (a + b + m - 1) * m * (b - m) * x * x / ((a + 2 * m - 1) * (a + 2 * m - 1))
        beta = m + m * (b - m) * x / (a + 2 * m - 1) + (a + m) * (a * y - b * x + 1.0 + m * (2.0 - x)) / (a + 2 * m + 1)
        return alpha, beta

    result = _nonzero(a * (a * y - b * x + 1.0) / (a + 1.0))
    c, d, done = result, 0.0, False
    for m in range(1, iterations):
        c, d, step = _lentz(c, d, *terms(m))
        result, done, finished = _accumulate(result, step, done)
        if finished:
            return result
    return result


@functools.cache
def gauss_legendre(n: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Nodes and weights on [-1, 1] (Newton on the Legendre polynomial from Chebyshev starts)."""
    nodes, weights = [], []
    for i in range(1, n + 1):
        x = math.cos(math.pi * (i - 0.25) / (n + 0.5))
        for _ in range(100):
            p0, p1 = 1.0, x
            for k in range(2, n + 1):
                p0, p1 = p1, ((2 * k - 1) * x * p1 - (k - 1) * p0) / k
            derivative = n * (x * p1 - p0) / (x * x - 1.0)
            step = p1 / derivative
            x -= step
            if abs(step) < 1e-17:
                break
        p0, p1 = 1.0, x
        for k in range(2, n + 1):
            p0, p1 = p1, ((2 * k - 1) * x * p1 - (k - 1) * p0) / k
        derivative = n * (x * p1 - p0) / (x * x - 1.0)
        nodes.append(x)
        weights.append(2.0 / ((1.0 - x * x) * derivative * derivative))
    return tuple(nodes), tuple(weights)


def normal_quantile(p: float) -> float:
    """A start for Newton (Acklam's rational approximation, ~1e-9 relative; Newton then converges)."""
    a = (
        -3.969683028665376e01,
        2.209460984245205e02,
        -2.759285104469687e02,
        1.383577518672690e02,
        -3.066479806614716e01,
        2.506628277459239e00,
    )
    b = (
        -5.447609879822406e01,
        1.615858368580409e02,
        -1.556989798598866e02,
        6.680131188771972e01,
        -1.328068155288572e01,
    )
    c = (
        -7.784894002430293e-03,
        -3.223964580411365e-01,
        -2.400758277161838e00,
        -2.549732539343734e00,
        4.374664141464968e00,
        2.938163982698783e00,
    )
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00)
    if p < 0.02425:
        q = math.sqrt(-2 * math.log(p))
        return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / (
            (((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1
        )
    if p > 1 - 0.02425:
        return -normal_quantile(1 - p)
    q = p - 0.5
    r = q * q
    return (
        (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5])
        * q
        / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
    )


def _normal_quantiles(u: np.ndarray) -> np.ndarray:
    return np.array([normal_quantile(float(p)) for p in u], dtype=float)


# --- small functions ------------------------------------------------------------------------------


def _log_elementwise(function: Callable[[float], float], pole: float, y: np.ndarray) -> np.ndarray:
    """math.log or math.log1p on each element of y (-inf at the pole, nan below it): libm's, as
    scipy's xlogy calls it; numpy's vectorized log rounds ~0.5% of values the other way."""

    def one(v: float) -> float:
        return function(v) if v > pole else (-math.inf if v == pole else math.nan)

    return np.array([one(v) for v in y.reshape(-1).tolist()], dtype=float).reshape(y.shape)


def xlogy(x: Array, y: Array) -> np.ndarray:
    """x log y, 0 where x = 0 (and y is not nan); log y on y's own elements, then broadcast."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where((x == 0) & ~np.isnan(y), 0.0, x * _log_elementwise(math.log, 0.0, y))


def xlog1py(x: Array, y: Array) -> np.ndarray:
    """x log(1 + y), 0 where x = 0 (and y is not nan)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where((x == 0) & ~np.isnan(y), 0.0, x * _log_elementwise(math.log1p, -1.0, y))


# cephes' lgam (scipy.special.gammaln): log Gamma(x) = (x - 1/2) log x - x + log(2 pi)/2 + A(1/x^2) / x for x >= 13
_LGAM_A = (
    8.11614167470508450300e-4,
    -5.95061904284301438324e-4,
    7.93650340457716943945e-4,
    -2.77777777730099687205e-3,
    8.33333333333331927722e-2,
)
_LGAM_LS2PI = 0.91893853320467274178


def _cephes_log_factorial(k: int) -> float:
    """log k! = log Gamma(k + 1) rounded as cephes' lgam rounds it (x = k + 1): log((x - 1)!) of
    the exact product below 13, else Stirling with its polynomial (its 3-term one from 1000)."""
    x = float(k + 1)
    if x < 13.0:
        return math.log(float(math.factorial(k)))
    q = (x - 0.5) * math.log(x) - x + _LGAM_LS2PI
    p = 1.0 / (x * x)
    if x >= 1000.0:
        return q + ((7.9365079365079365079365e-4 * p - 2.7777777777777777777778e-3) * p + 0.0833333333333333333333) / x
    total = _LGAM_A[0]
    for coefficient in _LGAM_A[1:]:
        total = total * p + coefficient
    return q + total / x


@functools.lru_cache(maxsize=16)
def _log_factorials(size: int) -> np.ndarray:
    table = np.array([_cephes_log_factorial(k) for k in range(size)], dtype=float)
    table.flags.writeable = False
    return table


def log_factorial(k: Array) -> np.ndarray:
    """log k! for integer-valued k >= 0 (floats holding integers too), from a table.

    Rounded as scipy.special.gammaln (cephes' lgam) rounds it, to the bit, not correctly (it is
    an ulp off for about half of them): the exact planned-power method's false-fail rate is
    1 - (a sum ~ 1 of terms exp(log n! - log a! - ...)), so an ulp of log n! (9e-13 at n = 1319)
    moves it by ~1e-12, the absolute tolerance at which verify holds it to what older bundles ship."""
    counts = np.asarray(k).astype(np.int64)
    top = int(counts.max(initial=0)) + 1
    return _log_factorials(max(64, 1 << (top - 1).bit_length()))[counts]


def ndtr(x: Array) -> np.ndarray:
    """Phi(x), the standard normal CDF, computed as cephes' ndtr (scipy's) computes it."""
    values = np.asarray(x, dtype=float)
    out = np.empty(values.shape)
    flat = out.reshape(-1)
    for i, v in enumerate(values.reshape(-1).tolist()):
        t = v * 0.7071067811865476  # 1 / sqrt(2), rounded as cephes' M_SQRT1_2
        z = abs(t)
        if z < 0.7071067811865476:
            flat[i] = 0.5 + 0.5 * math.erf(t)
        else:
            tail = 0.5 * math.erfc(z)
            flat[i] = 1.0 - tail if t > 0 else tail
    return out


# --- inverting a tail by Newton (Halley near the root) ---------------------------------------------

State = tuple[np.ndarray, ...]


def _invert(
    u: np.ndarray, state: State, tails: Callable[..., tuple[np.ndarray, ...]], shift: Callable[..., State]
) -> State:
    """Solve log P(t) = log u (u <= 1/2) or log Q(t) = log(1 - u) (u > 1/2) for 0 < u < 1, in a
    variable t in which the density is log-concave, so that both are concave and Newton converges
    from any start (module docstring).

    ``tails(*state)`` gives (log f, log P, log Q, d log f / dt), f = dP/dt, and ``shift(*state, dt)``
    moves t. With h = f / P: (log P)' = h, (log P)'' = h (d log f / dt - h) (for Q: -h_Q and
    -h_Q (d log f / dt + h_Q)). Once the Halley correction r = newton (log P)'' / (2 (log P)') is
    small the step is Halley's, newton / (1 + r), whose error is then ~C^2 dt^3 (C = |(log P)'' /
    (2 (log P)')|): an element stops when that is below 1e-17, when |dt| < 1e-11, or when it no
    longer moves (a subnormal x)."""
    upper = u > 0.5
    target = np.where(upper, np.log(1.0 - u), np.log(u))  # 1 - u is exact for u > 1/2
    state = tuple(np.array(part, dtype=float) for part in state)
    active = np.arange(u.size)
    for _ in range(_NEWTON_ITERATIONS):
        current = tuple(part[active] for part in state)
        up = upper[active]
        log_density, log_lower, log_upper, slope = tails(*current)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            h = np.exp(np.minimum(log_density - np.where(up, log_upper, log_lower), 700.0))
            first = np.where(up, -h, h)
            second = first * np.where(up, slope + h, slope - h)
            newton = -(np.where(up, log_upper, log_lower) - target[active]) / first
            curvature = second / (2.0 * first)
            ratio = newton * curvature
            halley = np.abs(ratio) < 0.1
            step = np.clip(np.nan_to_num(np.where(halley, newton / (1.0 + ratio), newton)), -_MAX_STEP, _MAX_STEP)
            settled = halley & (10.0 * (1.0 + curvature * curvature) * np.abs(step) ** 3 <= 1e-17)
        moved = shift(*current, step)
        for part, new in zip(state, moved):
            part[active] = new
        still = np.zeros(active.size, dtype=bool)
        for old, new in zip(current, moved):
            still |= new != old
        active = active[still & (np.abs(step) > _NEWTON_TOLERANCE) & ~settled]
        if active.size == 0:
            break
    return state


# --- the incomplete beta function and its inverse -------------------------------------------------


def _fraction_terms(a: float, b: float) -> int:
    """Enough terms of ``beta_fraction`` for shapes a, b (it needs O(sqrt(max(a, b))))."""
    return _MAX_ITERATIONS + int(20.0 * math.sqrt(a + b))


def _beta_log_tails(x: np.ndarray, y: np.ndarray, a: float, b: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(log(x^a y^b / B(a, b)), log I_x(a, b), log I_y(b, a)) for 0 < x, y with x + y = 1."""
    x0, y0 = a / (a + b), b / (a + b)
    with np.errstate(divide="ignore", invalid="ignore"):
        delta = np.where(x <= y, x - x0, y0 - y)  # from whichever of x, y is the smaller (exact)
        constant = math.fsum(
            (
                0.5 * math.log(a * b / (a + b)),
                -_LOG_SQRT_2PI,
                stirling_correction(a + b),
                -stirling_correction(a),
                -stirling_correction(b),
            )
        )
        log_front = (a * _log1pmx(delta / x0, np.log(x) - math.log(x0)) + constant) + b * _log1pmx(
            -delta / y0, np.log(y) - math.log(y0)
        )
        lower = x * (a + b + 2.0) < a + 1.0  # the fraction for I_x(a, b) there, else for I_y(b, a)
        p, q = np.where(lower, a, b), np.where(lower, b, a)
        fraction = beta_fraction(np.where(lower, x, y), np.where(lower, y, x), p, q, _fraction_terms(a, b))
        direct = log_front - np.log(fraction)
    other = _log1mexp(direct)
    return log_front, np.where(lower, direct, other), np.where(lower, other, direct)


def betainc(a: float, b: float, x: Array) -> np.ndarray:
    """I_x(a, b), the regularized incomplete beta function (the Beta(a, b) CDF), for a, b > 0."""
    x = np.asarray(x, dtype=float)
    inner = (x > 0) & (x < 1)
    out = np.where(x >= 1, 1.0, 0.0)
    out[np.isnan(x)] = np.nan
    xs = x[inner]
    out[inner] = np.exp(_beta_log_tails(xs, 1.0 - xs, a, b)[1])
    return out


def _beta_start(a: float, b: float, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Numerical Recipes' invbetai start: (x, y = 1 - x)."""
    if a >= 1 and b >= 1:
        z = -_normal_quantiles(u)  # A&S 26.5.22's upper-tail deviate
        al = (z * z - 3.0) / 6.0
        h = 2.0 / (1.0 / (2 * a - 1) + 1.0 / (2 * b - 1))
        w = z * np.sqrt(al + h) / h - (1.0 / (2 * b - 1) - 1.0 / (2 * a - 1)) * (al + 5.0 / 6.0 - 2.0 / (3.0 * h))
        odds = np.exp(np.clip(2.0 * w, -700.0, 700.0)) * (b / a)  # y / x
        return 1.0 / (1.0 + odds), odds / (1.0 + odds)
    t = math.exp(a * math.log(a / (a + b))) / a
    v = math.exp(b * math.log(b / (a + b))) / b
    w = t + v
    with np.errstate(divide="ignore"):
        x = np.exp(np.log(a * w * u) / a)
        y = np.exp(np.log(b * w * (1.0 - u)) / b)
    left = u < t / w
    return np.where(left, x, 1.0 - y), np.where(left, 1.0 - x, y)  # x = 0: the quantile underflows (it stays 0)


def _logit_shift(x: np.ndarray, y: np.ndarray, dt: np.ndarray) -> State:
    """log(x / y) += dt, each of x and y to its own relative precision (the smaller is the master)."""
    grow = np.exp(dt)
    nx, ny = x * grow / (y + x * grow), y / (y + x * grow)
    return np.where(nx <= 0.5, nx, 1.0 - ny), np.where(nx <= 0.5, 1.0 - nx, ny)


def betaincinv(a: float, b: float, u: Array) -> np.ndarray:
    """x with I_x(a, b) = u: the u-quantile of Beta(a, b), for a, b > 0 (module docstring)."""
    u = np.asarray(u, dtype=float)
    out = np.where(u >= 1, 1.0, 0.0)
    out[np.isnan(u)] = np.nan
    inner = (u > 0) & (u < 1)
    if inner.any():

        def tails(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
            return (*_beta_log_tails(x, y, a, b), a * y - b * x)  # d log(x^a y^b) / d log(x / y) = a y - b x

        out[inner] = _invert(u[inner], _beta_start(a, b, u[inner]), tails, _logit_shift)[0]
    return out


# --- the incomplete gamma functions and the inverse ------------------------------------------------


def _gamma_ratio(x: np.ndarray, s: float) -> tuple[np.ndarray, np.ndarray]:
    """(t, w) = (x / s - 1, log(x / s)), t from x - s (exact near x = s, where Q(s, x) is most
    sensitive to it: the rounding of x / s would move it by ~1e-16 sqrt(s) relative)."""
    t = (x - s) / s
    with np.errstate(divide="ignore"):
        return t, np.where(t > -0.5, np.log1p(t), np.log(x / s))


def _gamma_log_front(x: np.ndarray, s: float) -> np.ndarray:
    """log(x^s e^-x / Gamma(s))."""
    return s * _log1pmx(*_gamma_ratio(x, s)) + 0.5 * math.log(s / (2.0 * math.pi)) - stirling_correction(s)


def _gamma_series_fraction(x: np.ndarray, s: float, log_front: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log P, log Q) by the series (x < s + 1) or the continued fraction (module docstring)."""
    series = x < s + 1.0
    xs = np.where(series, x, 0.0)  # the series, on its elements
    term, total = np.ones_like(xs), np.ones_like(xs)
    for n in range(1, 10 * _MAX_ITERATIONS):
        term = term * xs / (s + n)
        total = total + term
        if np.all(term < total * _EPS):
            break
    xf = np.where(series, s + 2.0, x)  # the fraction, on its elements
    c, d = 1.0 / _TINY, 1.0 / (xf + 1.0 - s)
    fraction, done = d, False
    for n in range(1, 10 * _MAX_ITERATIONS):
        c, d, step = _lentz(c, d, -n * (n - s), xf + 2.0 * n + 1.0 - s)
        fraction, done, finished = _accumulate(fraction, step, done)
        if finished:
            break
    log_p_series = log_front - math.log(s) + np.log(total)
    log_q_fraction = log_front + np.log(fraction)
    log_p = np.where(series, log_p_series, _log1mexp(log_q_fraction))
    log_q = np.where(series, _log1mexp(log_p_series), log_q_fraction)
    return log_p, log_q


def _gamma_quadrature(x: np.ndarray, s: float) -> tuple[np.ndarray, np.ndarray]:
    """(log P, log Q) for s > 100 by Gauss-Legendre on the tail beyond w0 = log(x / s) (module docstring)."""
    t0, w0 = _gamma_ratio(x, s)
    lower = t0 <= 0  # integrate the lower tail (P) there, else the upper (Q)
    # How far from w0 s phi(w) - s phi(w0) reaches _DECAY: phi is convex, so by its tangent at w0,
    # by its curvature e^w (>= 1 above w0 > 0; >= 1/e down to w = -1) and, below, by phi(w) >= -1 - w.
    with np.errstate(divide="ignore"):
        linear = _DECAY / (s * np.abs(t0))
    curved = math.sqrt(2.0 * math.e * _DECAY / s)
    below = np.minimum(np.exp(w0) + _DECAY / s, np.where(w0 - curved >= -1.0, curved, np.inf))
    length = np.minimum(linear, np.where(lower, below, math.sqrt(2.0 * _DECAY / s)))
    nodes, weights = gauss_legendre(_GAUSS_ORDER)
    offsets = ((np.arange(_GAMMA_PANELS)[:, None] + (np.asarray(nodes)[None, :] + 1.0) / 2.0) / _GAMMA_PANELS).ravel()
    panel_weights = np.tile(weights, _GAMMA_PANELS) / (2.0 * _GAMMA_PANELS)
    w = w0[:, None] + (np.where(lower, -length, length))[:, None] * offsets[None, :]
    at_w0 = _log1pmx(t0, w0)  # -phi(w0)
    integral = (np.exp(s * (_log1pmx(np.expm1(w), w) - at_w0[:, None])) @ panel_weights) * length
    log_tail = np.log(integral) + s * at_w0 + 0.5 * math.log(s) - stirling_correction(s) - _LOG_SQRT_2PI
    other = _log1mexp(log_tail)
    return np.where(lower, log_tail, other), np.where(lower, other, log_tail)


def _gamma_log_tails(x: np.ndarray, s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(log(x^s e^-x / Gamma(s)), log P(s, x), log Q(s, x)) for 0 < x < inf."""
    log_front = _gamma_log_front(x, s)
    if s > _GAMMA_QUADRATURE_FROM:
        return (log_front, *_gamma_quadrature(x, s))
    return (log_front, *_gamma_series_fraction(x, s, log_front))


def _gamma_tails(s: float, x: Array) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=float)
    p, q = np.where(x > 0, 1.0, 0.0), np.where(x > 0, 0.0, 1.0)
    p[np.isnan(x)] = q[np.isnan(x)] = np.nan
    inner = (x > 0) & np.isfinite(x)
    if inner.any():
        _, log_p, log_q = _gamma_log_tails(x[inner], s)
        p[inner], q[inner] = np.exp(log_p), np.exp(log_q)
    return p, q


def gammainc(s: float, x: Array) -> np.ndarray:
    """P(s, x), the regularized lower incomplete gamma function (the Gamma(s) CDF), s > 0."""
    return _gamma_tails(s, x)[0]


def gammaincc(s: float, x: Array) -> np.ndarray:
    """Q(s, x) = 1 - P(s, x), computed directly where it is the smaller."""
    return _gamma_tails(s, x)[1]


def chi2_sf(dof: float, stat: float) -> float:
    """P(chi2(dof) > stat) = Q(dof / 2, stat / 2) (scipy.special.chdtrc)."""
    return float(gammaincc(dof / 2.0, stat / 2.0))


def _gamma_start(s: float, u: np.ndarray) -> np.ndarray:
    if s < 1.0:  # Numerical Recipes' gammpinv start
        t = 1.0 - s * (0.253 + s * 0.12)
        with np.errstate(divide="ignore"):
            x = np.where(u < t, np.exp(np.log(u / t) / s), 1.0 - np.log1p(-(u - t) / (1.0 - t)))
        return x  # x = 0: the quantile underflows (it stays 0)
    c = 1.0 / (9.0 * s)
    cube = 1.0 - c + _normal_quantiles(u) * math.sqrt(c)
    small = np.exp((np.log(u) + math.lgamma(s + 1.0)) / s)  # P ~ x^s / Gamma(s + 1) as x -> 0
    return np.where(cube > 0.1, s * cube**3, small)


def gammaincinv(s: float, u: Array) -> np.ndarray:
    """x with P(s, x) = u: the u-quantile of Gamma(s) (chi-square: 2 gammaincinv(nu / 2, u))."""
    u = np.asarray(u, dtype=float)
    out = np.where(u >= 1, np.inf, 0.0)
    out[np.isnan(u)] = np.nan
    inner = (u > 0) & (u < 1)
    if inner.any():

        def tails(x: np.ndarray) -> tuple[np.ndarray, ...]:
            return (*_gamma_log_tails(x, s), s - x)  # d log(x^s e^-x) / d log x = s - x

        out[inner] = _invert(u[inner], (_gamma_start(s, u[inner]),), tails, lambda x, dt: (x * np.exp(dt),))[0]
    return out
