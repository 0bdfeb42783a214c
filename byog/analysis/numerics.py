"""The numerics differential's formulas: pure functions of what two servers said, token by token.

Why token level: accuracy evals cannot see a kernel defect on a 135M model or on dummy weights
(both score ~0 whatever the kernel does). Two servers that score the same token path can be
compared position by position, and a defect that appears only past some context length shows
as a curve over context position rather than a shift in an average.

**What a server says about one position** (one row of a pass, see ``PassArrays``): the token at
that position, its logprob, and the top-k (id, logprob) pairs of the server's next-token
distribution there. Prompt positions come from ``prompt_logprobs=k`` (teacher-forced, the
prefill path); output positions from a greedy generation with ``logprobs=k`` (free-running, the
decode path). Positions are context positions: the number of tokens before the predicted one.

**Per position**, reference ``P`` (the baseline) against other ``Q`` (the candidate, or the
baseline itself for the A/A run), both on the same token path, with reference token ``y``:

- ``dlogprob = log Q(y) - log P(y)``; ``abs_dlogprob = |dlogprob|``.
- ``argmax_agree``: the top-1 ids are equal (ties broken by lower id, the same rule both sides).
- ``topk_overlap = |topk(P) ∩ topk(Q)| / k``.
- ``kl`` — the KL estimate on the shared top-k support with the residual mass lumped. Let
  ``A = topk(P) ∪ {y}`` and ``B = topk(Q) ∪ {y}`` (each side always reports ``y``), ``S = A ∩ B``,
  ``p_j = exp(log P(j))`` and ``q_j = exp(log Q(j))`` for ``j`` in ``S``, and the residual masses
  ``r_P = max(0, 1 - Σ_S p_j)``, ``r_Q = max(0, 1 - Σ_S q_j)``. Then

      kl = Σ_{j∈S} p_j (log p_j - log q_j)  +  r_P (log r_P - log max(r_Q, RESIDUAL_FLOOR))

  with ``0 log 0 = 0``. This is exactly KL(P'‖Q') where P' and Q' are P and Q coarsened onto
  the |S|+1 outcomes "each token of S" and "anything else". Coarsening never increases KL (the
  data-processing inequality), so ``0 <= kl <= KL(P‖Q)``: a lower bound that is exact when the
  two distributions agree outside S up to scale, and never an overstatement. ``RESIDUAL_FLOOR``
  only stops a log of 0 when the other side put (within float rounding) all its mass on S.

**Free-running divergence**, per prompt: the first output index where the two servers' greedy
tokens differ (``None`` when they agree on all of them). Output positions are compared only
before that index: after it the two contexts differ.

**Buckets**: positions are grouped by context position on a log2 scale — ``[0, 64)``,
``[64, 128)``, ``[128, 256)``, … — so a long-context defect shows as the last buckets moving.

**The envelope, the distance and the verdict** (``verdict``; docs/numerics.md states the same
rule). Two comparisons of stock against stock measure the noise already in the stock server: the
A/A run (the baseline under a different batch composition: reference requests sent one at a time,
the other requests all at once) and the A/A′ run (the plan's envelope variant of the baseline,
default ``--enforce-eager``, all at once). With the plan's ``NumericsTolerance`` t, for each
bucket b and each drift metric m in {mean abs_dlogprob, mean kl}:

    envelope[b][m] = max(AA[b][m], AA′[b][m], t.floor(m) / t.envelope_factor)
    distance[b]    = max over m of candidate[b][m] / envelope[b][m]      (in envelopes)

- **diverges** when, in any bucket, the candidate's mean kl > ``t.diverge_kl`` (default 0.1
  nats, more than a 4-bit quantisation of a model typically costs): a different distribution,
  not slightly different numbers. Argmax agreement and top-k overlap are reported but do not
  decide: they flip at near-ties under any numerical change (bf16 logits tie often), and a
  flip at a confident position already costs KL (swapping p = 0.7 and 0.2 is 0.25 nats);
- else **drifts** when any bucket's distance exceeds ``t.envelope_factor`` (default 2): so a
  metric below its floor never drifts, whatever stock's own noise (exactly 0 in many buckets);
- else **numerically equivalent**: within stock's own variant noise.

Only buckets with at least ``t.min_bucket_positions`` positions on every side take part (a
bucket of three positions says nothing); the rest are reported and not judged. A comparison's
verdict is the worse of its two families' (prefill: prompt positions; decode: output positions).

**Sensitivity** (``byog.analysis.numerics_summary``): a verdict is evidence only when this model
on this server can show a change. The baseline is **insensitive** when its next-token
distributions are flat (``head_ratio``: the median of p(top-1)/p(top-k) at most
``t.flat_head_ratio``, default 1.05; a uniform distribution gives exactly 1, random weights at
vLLM's dummy scale ~1.0000) or when its control (the plan's ``numerics.control``, default
``--dtype float16``) is judged "numerically equivalent" by the rule above: the differential did
not see a change of known size. Then every comparison of that baseline reads **insensitive**.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np

from byog.schemas.numerics import NumericsVerdict
from byog.schemas.plan import NumericsTolerance

RESIDUAL_FLOOR = 1e-12
FIRST_BUCKET_END = 64  # the first bucket is [0, 64); then powers of two
DRIFT_METRICS = ("mean_abs_dlogprob", "mean_kl")
DEFAULT_TOLERANCE = NumericsTolerance()
SEVERITY: dict[str, int] = {"numerically equivalent": 0, "drifts": 1, "diverges": 2}


@dataclass(frozen=True)
class PassArrays:
    """One server's answers for one pass, one entry per (prompt, position), as columns.

    ``top_ids``/``top_logprobs`` are (n, k), each row sorted by logprob descending, ties by
    lower id (``sort_top`` does it); ``token``/``logprob`` are the position's own token and its
    logprob (present even when the token is outside the top-k).
    """

    prompt: np.ndarray  # (n,) str
    position: np.ndarray  # (n,) int64 context position
    token: np.ndarray  # (n,) int64
    logprob: np.ndarray  # (n,) float64
    top_ids: np.ndarray  # (n, k) int64
    top_logprobs: np.ndarray  # (n, k) float64

    @property
    def k(self) -> int:
        return int(self.top_ids.shape[1])

    @staticmethod
    def from_rows(rows: Sequence[Mapping[str, Any]]) -> PassArrays:
        """From row dicts with keys prompt, position, token, logprob, top_ids, top_logprobs."""
        k = min((len(r["top_ids"]) for r in rows), default=0)
        return PassArrays(
            prompt=np.array([str(r["prompt"]) for r in rows], dtype=object),
            position=np.array([int(r["position"]) for r in rows], dtype=np.int64),
            token=np.array([int(r["token"]) for r in rows], dtype=np.int64),
            logprob=np.array([float(r["logprob"]) for r in rows], dtype=np.float64),
            top_ids=np.array([list(r["top_ids"])[:k] for r in rows], dtype=np.int64).reshape(len(rows), k),
            top_logprobs=np.array([list(r["top_logprobs"])[:k] for r in rows], dtype=np.float64).reshape(len(rows), k),
        )

    @staticmethod
    def concat(parts: Sequence[PassArrays]) -> PassArrays:
        k = min((p.k for p in parts), default=0)
        return PassArrays(
            np.concatenate([p.prompt for p in parts]),
            np.concatenate([p.position for p in parts]),
            np.concatenate([p.token for p in parts]),
            np.concatenate([p.logprob for p in parts]),
            np.concatenate([p.top_ids[:, :k] for p in parts]),
            np.concatenate([p.top_logprobs[:, :k] for p in parts]),
        )

    def take(self, index: np.ndarray) -> PassArrays:
        return PassArrays(
            self.prompt[index],
            self.position[index],
            self.token[index],
            self.logprob[index],
            self.top_ids[index],
            self.top_logprobs[index],
        )


def sort_top(top: Mapping[int, float], k: int) -> tuple[list[int], list[float]]:
    """The k most likely (id, logprob) pairs, logprob descending, ties by lower id."""
    ranked = sorted(top.items(), key=lambda item: (-item[1], item[0]))[:k]
    return [int(i) for i, _ in ranked], [float(v) for _, v in ranked]


# --- per position ----------------------------------------------------------------------------


def kl_shared_support(
    ref_token: np.ndarray,
    ref_logprob: np.ndarray,
    ref_ids: np.ndarray,
    ref_lp: np.ndarray,
    oth_logprob: np.ndarray,
    oth_ids: np.ndarray,
    oth_lp: np.ndarray,
) -> np.ndarray:
    """The module docstring's ``kl`` for n positions at once (reference token y on both sides).

    kl = Σ_{j∈S} p_j (log p_j − log q_j) + r_P (log r_P − log max(r_Q, RESIDUAL_FLOOR)),
    S = (topk(P) ∪ {y}) ∩ (topk(Q) ∪ {y}), r = max(0, 1 − Σ_S mass).
    """
    n = ref_token.shape[0]
    # Each side's support: its top-k plus y (y's own logprob; a y already in the top-k is masked out).
    a_ids = np.concatenate([ref_ids, ref_token[:, None]], axis=1)
    a_lp = np.concatenate([ref_lp, ref_logprob[:, None]], axis=1)
    a_valid = np.concatenate(
        [np.ones_like(ref_ids, dtype=bool), ~(ref_ids == ref_token[:, None]).any(axis=1)[:, None]], axis=1
    )
    b_ids = np.concatenate([oth_ids, ref_token[:, None]], axis=1)
    b_lp = np.concatenate([oth_lp, oth_logprob[:, None]], axis=1)
    b_valid = np.concatenate(
        [np.ones_like(oth_ids, dtype=bool), ~(oth_ids == ref_token[:, None]).any(axis=1)[:, None]], axis=1
    )
    # match[i, a, b]: slot a of P's support and slot b of Q's support are the same token.
    match = (a_ids[:, :, None] == b_ids[:, None, :]) & a_valid[:, :, None] & b_valid[:, None, :]
    in_shared = match.any(axis=2)  # (n, ka): P's slot is in S
    q_lp_for_a = np.where(match, b_lp[:, None, :], 0.0).sum(axis=2)  # Q's logprob of P's slot token (one match at most)
    p = np.where(in_shared, np.exp(a_lp), 0.0)
    q = np.where(in_shared, np.exp(q_lp_for_a), 0.0)
    terms = np.where(in_shared, p * (a_lp - q_lp_for_a), 0.0).sum(axis=1)
    r_p = np.clip(1.0 - p.sum(axis=1), 0.0, 1.0)
    r_q = np.clip(1.0 - q.sum(axis=1), 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        residual = np.where(r_p > 0.0, r_p * (np.log(r_p) - np.log(np.maximum(r_q, RESIDUAL_FLOOR))), 0.0)
    out = terms + residual
    return out if n else np.zeros(0)


def topk_overlap(ref_ids: np.ndarray, oth_ids: np.ndarray) -> np.ndarray:
    """|topk(P) ∩ topk(Q)| / k per position (ids within one row are distinct)."""
    if ref_ids.shape[0] == 0:
        return np.zeros(0)
    k = ref_ids.shape[1]
    shared: np.ndarray = (ref_ids[:, :, None] == oth_ids[:, None, :]).any(axis=2).sum(axis=1)
    return shared / float(k)


@dataclass(frozen=True)
class PositionMetrics:
    """Per-position comparison of two passes on the same token path (aligned arrays)."""

    prompt: np.ndarray
    position: np.ndarray
    token: np.ndarray
    ref_logprob: np.ndarray
    other_logprob: np.ndarray
    abs_dlogprob: np.ndarray
    argmax_agree: np.ndarray  # bool
    topk_overlap: np.ndarray
    kl: np.ndarray

    def __len__(self) -> int:
        return int(self.position.shape[0])


def align(ref: PassArrays, other: PassArrays) -> tuple[np.ndarray, np.ndarray]:
    """Indices into ref and other of the (prompt, position) pairs both hold with the same token."""
    index = {(p, int(pos)): i for i, (p, pos) in enumerate(zip(other.prompt, other.position, strict=True))}
    ri, oi = [], []
    for i, (p, pos, tok) in enumerate(zip(ref.prompt, ref.position, ref.token, strict=True)):
        j = index.get((p, int(pos)))
        if j is not None and int(other.token[j]) == int(tok):
            ri.append(i)
            oi.append(j)
    return np.array(ri, dtype=np.int64), np.array(oi, dtype=np.int64)


def compare_positions(ref: PassArrays, other: PassArrays) -> PositionMetrics:
    """Every position both passes scored on the same path: the per-position metrics of the docstring."""
    ri, oi = align(ref, other)
    a, b = ref.take(ri), other.take(oi)
    k = min(a.k, b.k)
    kl = kl_shared_support(
        a.token, a.logprob, a.top_ids[:, :k], a.top_logprobs[:, :k], b.logprob, b.top_ids[:, :k], b.top_logprobs[:, :k]
    )
    argmax = (a.top_ids[:, 0] == b.top_ids[:, 0]) if k else np.zeros(len(ri), dtype=bool)
    return PositionMetrics(
        prompt=a.prompt,
        position=a.position,
        token=a.token,
        ref_logprob=a.logprob,
        other_logprob=b.logprob,
        abs_dlogprob=np.abs(b.logprob - a.logprob),
        argmax_agree=argmax,
        topk_overlap=topk_overlap(a.top_ids[:, :k], b.top_ids[:, :k]),
        kl=kl,
    )


# --- free running ----------------------------------------------------------------------------


def first_divergence(ref_tokens: Sequence[int], other_tokens: Sequence[int]) -> int | None:
    """The first output index where two greedy generations differ; None when one is a prefix of the other.

    A length difference alone is not a divergence (one server may have stopped at EOS or a limit).
    """
    for i, (a, b) in enumerate(zip(ref_tokens, other_tokens, strict=False)):
        if int(a) != int(b):
            return i
    return None


def generated_paths(arrays: PassArrays) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """prompt -> (positions, tokens) of output positions, in position order."""
    paths: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for prompt in dict.fromkeys(arrays.prompt.tolist()):
        rows = np.flatnonzero(arrays.prompt == prompt)
        order = rows[np.argsort(arrays.position[rows], kind="stable")]
        paths[prompt] = (arrays.position[order], arrays.token[order])
    return paths


def divergences(ref: PassArrays, other: PassArrays) -> dict[str, int | None]:
    """Per prompt of ref: the first output index where other's generation departs from it."""
    theirs = generated_paths(other)
    found: dict[str, int | None] = {}
    for prompt, (_, tokens) in generated_paths(ref).items():
        other_tokens = theirs.get(prompt, (np.zeros(0), np.zeros(0, dtype=np.int64)))[1]
        found[prompt] = first_divergence(tokens.tolist(), other_tokens.tolist())
    return found


def before_divergence(arrays: PassArrays, diverged_at: Mapping[str, int | None]) -> PassArrays:
    """The output rows before each prompt's first divergence (where both paths still agree)."""
    keep = np.zeros(len(arrays.position), dtype=bool)
    for prompt, (positions, _) in generated_paths(arrays).items():
        rows = np.flatnonzero(arrays.prompt == prompt)
        cut = diverged_at.get(prompt)
        start = int(positions[0]) if len(positions) else 0
        keep[rows] = True if cut is None else arrays.position[rows] < start + cut
    return arrays.take(np.flatnonzero(keep))


class DivergenceStats(TypedDict):
    prompts: int
    diverged: int
    earliest: int | None  # first-divergence index, among the prompts that diverged
    median: float | None


def divergence_stats(diverged_at: Mapping[str, int | None]) -> DivergenceStats:
    """n prompts, how many diverged, and the earliest and median first-divergence index among those."""
    found = sorted(v for v in diverged_at.values() if v is not None)
    return {
        "prompts": len(diverged_at),
        "diverged": len(found),
        "earliest": found[0] if found else None,
        "median": float(np.median(found)) if found else None,
    }


# --- buckets ---------------------------------------------------------------------------------


def bucket_start(position: int) -> int:
    """The start of a position's log2 bucket: 0 below FIRST_BUCKET_END, else the power of two at or below it."""
    if position < FIRST_BUCKET_END:
        return 0
    return 1 << (int(position).bit_length() - 1)


def bucket_end(start: int) -> int:
    return FIRST_BUCKET_END if start == 0 else start * 2


def bucket_label(start: int) -> str:
    return f"{start}-{bucket_end(start) - 1}"


def aggregate(metrics: PositionMetrics) -> list[dict[str, Any]]:
    """One row per non-empty bucket, in position order: n and the means (and max |Δlogprob|)."""
    starts = np.array([bucket_start(int(p)) for p in metrics.position], dtype=np.int64)
    rows = []
    for start in sorted(set(starts.tolist())):
        sel = starts == start
        rows.append(
            {
                "bucket": bucket_label(start),
                "start": start,
                "end": bucket_end(start),
                "positions": int(sel.sum()),
                "mean_abs_dlogprob": float(metrics.abs_dlogprob[sel].mean()),
                "max_abs_dlogprob": float(metrics.abs_dlogprob[sel].max()),
                "mean_kl": float(metrics.kl[sel].mean()),
                "max_kl": float(metrics.kl[sel].max()),
                "argmax_agreement": float(metrics.argmax_agree[sel].mean()),
                "topk_overlap": float(metrics.topk_overlap[sel].mean()),
            }
        )
    return rows


# --- envelope, distance and verdict ---------------------------------------------------------


def envelope(
    aa_bucket: Mapping[str, Any] | None,
    variant_bucket: Mapping[str, Any] | None,
    tolerance: NumericsTolerance = DEFAULT_TOLERANCE,
) -> dict[str, float]:
    """envelope[m] = max(AA[m], AA'[m], floor[m] / factor) for each drift metric m (a missing side counts 0)."""
    sides = [b for b in (aa_bucket, variant_bucket) if b is not None]
    floor = {m: tolerance.floor(m) / tolerance.envelope_factor for m in DRIFT_METRICS}
    return {m: max([float(b[m]) for b in sides] + [floor[m]]) for m in DRIFT_METRICS}


def distances(
    candidate: Sequence[Mapping[str, Any]],
    aa: Sequence[Mapping[str, Any]],
    variant: Sequence[Mapping[str, Any]],
    tolerance: NumericsTolerance = DEFAULT_TOLERANCE,
) -> list[dict[str, Any]]:
    """Per candidate bucket: the envelope, the distance (max over metrics of candidate / envelope) and
    whether the bucket is judged (the A/A run covers it and neither side is thin)."""
    aa_by, var_by = {int(r["start"]): r for r in aa}, {int(r["start"]): r for r in variant}
    out = []
    for row in candidate:
        start = int(row["start"])
        ref, var = aa_by.get(start), var_by.get(start)
        limits = envelope(ref, var, tolerance)
        sides = [int(row["positions"])] + [int(b["positions"]) for b in (ref, var) if b is not None]
        judged = ref is not None and min(sides) >= tolerance.min_bucket_positions
        out.append(
            {
                "bucket": row["bucket"],
                "start": start,
                "positions": int(row["positions"]),
                "judged": judged,
                "envelope_abs_dlogprob": limits["mean_abs_dlogprob"],
                "envelope_kl": limits["mean_kl"],
                "distance": max(float(row[m]) / limits[m] for m in DRIFT_METRICS),
            }
        )
    return out


def verdict(
    candidate: Sequence[Mapping[str, Any]],
    aa: Sequence[Mapping[str, Any]],
    variant: Sequence[Mapping[str, Any]] = (),
    tolerance: NumericsTolerance = DEFAULT_TOLERANCE,
) -> tuple[NumericsVerdict, list[str]]:
    """The rule of the module docstring over bucket rows of one comparison; returns (verdict, reasons).

    Reasons name each bucket that decided the verdict, with the numbers; a bucket the A/A run does
    not cover, or that is thin on any side, is skipped.
    """
    by_start = {int(row["start"]): row for row in candidate}
    diverging: list[str] = []
    drifting: list[str] = []
    for d in distances(candidate, aa, variant, tolerance):
        if not d["judged"]:
            continue
        row = by_start[d["start"]]
        where = f"positions {row['bucket']}"
        if float(row["mean_kl"]) > tolerance.diverge_kl:
            diverging.append(f"{where}: mean KL {row['mean_kl']:.3g} nats > {tolerance.diverge_kl:g}")
        if d["distance"] > tolerance.envelope_factor:
            drifting.append(
                f"{where}: {d['distance']:.3g} envelopes (mean |Δlogprob| {row['mean_abs_dlogprob']:.3g}, "
                f"mean KL {row['mean_kl']:.3g}) > {tolerance.envelope_factor:g}"
            )
    if diverging:
        return "diverges", diverging
    if drifting:
        return "drifts", drifting
    return "numerically equivalent", []


# --- sensitivity -----------------------------------------------------------------------------


def head_ratio(arrays: PassArrays) -> float | None:
    """The median over positions of p(top-1) / p(top-k): 1.0 for a uniform next-token distribution."""
    if len(arrays.position) == 0 or arrays.k < 2:
        return None
    return float(np.median(np.exp(arrays.top_logprobs[:, 0] - arrays.top_logprobs[:, -1])))


def mean_top1_prob(arrays: PassArrays) -> float | None:
    if len(arrays.position) == 0 or arrays.k < 1:
        return None
    return float(np.exp(arrays.top_logprobs[:, 0]).mean())
