"""summary.json: derived by ``byog.analysis.summary.derive_summary``; verify recomputes it.

Every row inside is typed (``byog.schemas.bench``, ``byog.schemas.evals``): analysis returns
these models, and report, claims, policy and verify read them, never raw dicts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from byog.core.io import read_json
from byog.schemas.base import Derived
from byog.schemas.bench import BenchSummary
from byog.schemas.evals import EvalSummary
from byog.schemas.migrate import migrate
from byog.schemas.numerics import NumericsSummary
from byog.schemas.registry import register

SUMMARY_SCHEMA_VERSION = 14

# What each schema version added to the derived document, or computes differently now: a path
# ("*": every entry of a list) to dicts and the keys concerned. verify compares a shipped summary
# of an older version without them (they did not exist, or meant something else, when it was
# made); the recomputed summary, with them, is what claims, policy and the report read.
_POINT_METRICS_V2 = frozenset(
    {
        # added: speculative decoding's CIs and coverage, energy, the client-counted decode steps
        "acceptance_length_ci",
        "acceptance_per_position_ci",
        "draft_coverage",
        "tokens_per_request_step",
        "decode_steps",
        "crosscheck_ratio",
        "power",
        # computed differently: steps are counted by the client inside the window, not from Δiterations
        "tokens_per_step",
        "decode_step_s",
        "crosscheck_decode_tok_s",
    }
)
CHANGED_IN: dict[int, list[tuple[tuple[str, ...], frozenset[str]]]] = {
    2: [
        (
            ("evals", "verdicts", "*"),
            frozenset({"discordant", "planned_false_fail", "screening", "degenerate", "degenerate_why"}),
        ),
        (("bench", "points", "*", "metrics"), _POINT_METRICS_V2),
    ],
    # 3: a point pooled over launches is invalid when any of its launches is (bench_summary).
    3: [(("bench", "points", "*"), frozenset({"valid", "invalid_reasons"}))],
    # 4: the software power cap no longer invalidates a point; an A/B at a point says when the two
    # servers' GPU conditions differ; greedy verdicts are judged at their observed discordance.
    4: [
        (("bench", "points", "*"), frozenset({"valid", "invalid_reasons"})),
        (("bench", "launch_points", "*"), frozenset({"valid", "invalid_reasons"})),
        (("bench", "comparisons", "*"), frozenset({"conditions"})),
        (
            ("evals", "verdicts", "*"),
            frozenset(
                {
                    "screening",
                    "planned_redraw",
                    "observed_discordance",
                    "observed_redraw",
                    "observed_false_fail",
                    "observed_power",
                    "observed_sound",
                    "sound_n",
                    "screening_label",
                }
            ),
        ),
    ],
    # 5: "insensitive" replaces only a no-difference numerics verdict (a drift found stands), and a
    # baseline's sensitivity names its control's menu entry, why, and the entry to try.
    5: [
        (("numerics", "comparisons", "*"), frozenset({"verdict"})),
        (("numerics", "sensitivity", "*"), frozenset({"control_change", "control_why", "try_control"})),
    ],
    # 6: the time to verdict; an interleaved pair's wake-up effects.
    6: [((), frozenset({"time_to_verdict"})), (("bench",), frozenset({"wake_effects"}))],
    # 7: a comparison with launches (or a calibration) takes the launch t interval, not the
    # hierarchical bootstrap; one launch per side says so (ci_note) and is labelled "screening".
    7: [
        (
            ("bench", "comparisons", "*"),
            frozenset(
                {"ci_low", "ci_high", "ci90_low", "ci90_high", "within_noise", "label", "units", "ci_df", "ci_note"}
            ),
        )
    ],
    # 8: an interleaved pair's wake checks and the method its verdict uses.
    8: [(("bench",), frozenset({"wake_integrity"}))],
    # 9: a verdict of an eval with planned looks carries its group-sequential record.
    9: [(("evals", "verdicts", "*"), frozenset({"sequential"}))],
    # 10: the run's wall time by phase, from phases.json.
    10: [((), frozenset({"phases"}))],
    # 11: every verdict (and its sequential record) names its method; binary items are judged by
    # Tango's score statistic (verify recomputes an older summary's verdicts by the paired t:
    # SCORE_INTERVAL_VERSION, bundles.checks.recompute.stated_summary).
    11: [
        (("evals", "verdicts", "*"), frozenset({"method"})),
        (("evals", "verdicts", "*", "sequential"), frozenset({"method"})),
    ],
    # 12: an interleaved server's wake-integrity fingerprints are their own kind of time (no longer idle/other).
    12: [
        (("time_to_verdict", "run"), frozenset({"checking_s"})),
        (("time_to_verdict", "servers", "*"), frozenset({"checking_s"})),
        (("phases",), frozenset({"check_s"})),
    ],
    # 13: a verdict of an eval with operating points carries its per-stratum record.
    13: [(("evals", "verdicts", "*"), frozenset({"strata"}))],
    # 14: each stratum carries the batch both servers' counters measured over it.
    14: [
        (
            ("evals", "verdicts", "*", "strata", "strata", "*"),
            frozenset({"candidate_tokens_per_step", "baseline_tokens_per_step"}),
        )
    ],
}
SCORE_INTERVAL_VERSION: Final = 11  # the first summary schema that judges binary items by Tango's statistic


def _drop(node: Any, path: tuple[str, ...], keys: frozenset[str]) -> Any:
    if not path:
        return {k: v for k, v in node.items() if k not in keys} if isinstance(node, dict) else node
    head, rest = path[0], path[1:]
    if head == "*":
        return [_drop(item, rest, keys) for item in node] if isinstance(node, list) else node
    if isinstance(node, dict) and head in node:
        return {**node, head: _drop(node[head], rest, keys)}
    return node


def as_of_version(document: dict[str, Any], version: int) -> dict[str, Any]:
    """A summary.json document of the current version, cut to what an older ``version`` holds."""
    out: dict[str, Any] = dict(document, schema_version=version)
    for changed_in, changes in CHANGED_IN.items():
        if changed_in > version:
            for path, keys in changes:
                out = _drop(out, path, keys)
    return out


class SummaryPlan(Derived):
    name: str
    baseline: str
    candidates: list[str]


class TimeSpent(Derived):
    """Seconds of wall time by what they were spent on (``byog.analysis.time_to_verdict``).

    ``evaluating_s`` holds the evals and the numerics passes; ``idle_s`` is what is left of the wall
    (prompt building, /metrics snapshots, file writes, stops, and on a server the time its partner
    had the GPU); ``checking_s`` the wake-integrity fingerprints of an interleaved server.
    ``measuring_share`` = measuring_s / wall_s.
    """

    wall_s: float
    starting_s: float
    measuring_s: float
    evaluating_s: float
    swapping_s: float
    checking_s: float = 0.0  # an interleaved server's wake-integrity fingerprints
    idle_s: float
    measuring_share: float | None = None


class ServerTime(TimeSpent):
    server: str
    launch: int = 1


class TimeToVerdict(Derived):
    """Per server (and launch) and for the run: where the wall time of the run went."""

    run: TimeSpent
    servers: list[ServerTime]


class PhaseTime(Derived):
    """A run's wall time by phase, from its phase record (``byog.analysis.phases``): seconds starting,
    in warm-up waves, measuring (warm-up excluded), swapping, checking wakes, evaluating (evals and numerics) and
    other (the rest of the wall); ``measuring_share`` = measuring_s / wall_s."""

    wall_s: float
    start_s: float
    warmup_s: float
    measuring_s: float
    swap_s: float
    check_s: float = 0.0  # wake-check phases: an interleaved server's wake-integrity fingerprints
    eval_s: float
    other_s: float
    measuring_share: float | None = None


class Summary(Derived):
    schema_version: int = SUMMARY_SCHEMA_VERSION
    plan: SummaryPlan
    bench: BenchSummary
    evals: EvalSummary
    numerics: NumericsSummary | None = None  # absent from summary.json when the run has no numerics
    time_to_verdict: TimeToVerdict | None = None  # None: no server recorded a start
    phases: PhaseTime | None = None  # None: a run made before byog recorded phases (absent from summary.json)

    def to_json(self) -> dict[str, Any]:
        """The document summary.json holds (write it with ``atomic_write_json``).

        A run without numerics writes no ``numerics`` key, so its summary.json is the same bytes
        as before the numerics part existed.
        """
        absent = {k for k in ("numerics", "time_to_verdict", "phases") if getattr(self, k) is None}
        return self.model_dump(mode="json", exclude=absent or None)


def read_summary(path: Path) -> Summary:
    """A summary.json written earlier (by this byog or an older one: migrated first)."""
    return Summary.model_validate(migrate("summary", read_json(path), label=str(path)))


register("summary", Summary, version=SUMMARY_SCHEMA_VERSION, files=("summary.json",))
