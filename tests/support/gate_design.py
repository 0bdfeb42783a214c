"""The cheapest sound design of an eval: the search the task registry's standard tier was cut by
(tests/unit/plans/test_tiers.py holds the registry to it)."""

from __future__ import annotations

from byog.analysis.gate_power import ItemModel, prob_equivalent


def cheapest_sound(
    model: ItemModel, max_items: int, max_passes: int, sampled: bool, margin: float, target: float, step: int = 1
) -> tuple[int, int] | None:
    """The (n, K) with n <= max_items, K <= max_passes and false-fail <= target that costs the
    fewest generations n x K (ties: more items); None when even (max_items, max_passes) misses.

    n is the least that meets the target, rounded up to a multiple of ``step`` (at most max_items).
    """
    best: tuple[int, int] | None = None
    for k in range(1, max_passes + 1) if sampled else [1]:
        if 1.0 - prob_equivalent(model, max_items, k, sampled, margin)[0] > target:
            continue
        lo, hi = 2, max_items  # false-fail falls with n (near enough monotone): bisect the least n
        while lo < hi:
            mid = (lo + hi) // 2
            if 1.0 - prob_equivalent(model, mid, k, sampled, margin)[0] <= target:
                hi = mid
            else:
                lo = mid + 1
        n = min(max_items, -(-lo // step) * step)
        if best is None or n * k < best[0] * best[1] or (n * k == best[0] * best[1] and n > best[0]):
            best = (n, k)
    return best
