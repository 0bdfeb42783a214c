"""The bundle's caveats: every condition that voids or limits what its numbers claim, decided once.

Two readers, one decision. The report's first screen words each caveat as one warning
(``byog.report.setup.warnings``: the headline's Warnings block and verify's ``warning:`` lines),
and the in-toto statements (``byog.bundles.attestations``) read the same list, so no statement
says PASSED beside a warning that undermines it. Each caveat names whom it concerns
(``servers``) and which attested gates it ``voids`` (the statement becomes FAILED) or
``limits`` (a PASSED one becomes WARNED); docs/bundles.md lists them.

A pure function of the summary, the server records and the plan (each as the report reads it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from byog.analysis.launch_diff import serve_flags
from byog.schemas.bench import PointSummary, WakeEffect, WakeIntegrity
from byog.schemas.plan import Plan
from byog.schemas.server import ServerRecord
from byog.schemas.summary import Summary

# the attested gates a caveat can undermine (byog.bundles.attestations)
Gate = Literal["validity", "pair", "speed claim", "accuracy", "engine", "wake integrity"]
Kind = Literal[
    "synthetic acceptance",
    "dummy weights",
    "accuracy not checked",
    "invalid point",
    "invalid on one side",
    "wake integrity",
    "wake effect",
    "baseline not stock",
]

SYNTHETIC = "speculative_config.rejection_sample_method"
SYNTHETIC_LENGTH = "speculative_config.synthetic_acceptance_length"


@dataclass(frozen=True)
class Caveat:
    kind: Kind
    servers: tuple[str, ...] = ()  # whom it concerns; () none in particular
    voids: tuple[Gate, ...] = ()  # a statement of these gates about ``servers`` is FAILED
    limits: tuple[Gate, ...] = ()  # ... and a PASSED one of these is WARNED
    point: PointSummary | None = None  # invalid point
    one_side: tuple[tuple[str, str], ...] = ()  # invalid on one side: (point id, the invalid side)
    integrity: WakeIntegrity | None = None  # wake integrity
    changed: str = ""  # wake integrity: the failed check's sentence
    wake_effect: WakeEffect | None = None  # wake effect
    forced_length: str | None = None  # synthetic acceptance: the acceptance length forced, when given

    def undermines(self, gate: Gate, servers: Sequence[str], point_id: str | None = None) -> bool:
        """Whether this caveat voids or limits a statement of ``gate`` about ``servers`` (every server:
        validity), at ``point_id`` where the statement is about one point (a claim)."""
        concerns = not self.servers or bool(set(self.servers) & set(servers))
        at = self.wake_effect.point_id if self.wake_effect is not None else None
        elsewhere = at is not None and point_id is not None and at != point_id
        return concerns and not elsewhere and (gate in self.voids or gate in self.limits)


def flags(record: ServerRecord | None) -> dict[str, str]:
    return serve_flags(record.argv or []) if record is not None else {}


def is_dummy(record: ServerRecord | None) -> bool:
    return flags(record).get("--load-format") == "dummy"


def compared_pairs(summary: Summary) -> list[tuple[str, str]]:
    """Every candidate/baseline pair the bundle compares (bench, then evals), in order."""
    found = [(c.candidate, c.baseline) for c in summary.bench.comparisons]
    found += [(v.candidate, v.baseline) for v in summary.evals.verdicts]
    return list(dict.fromkeys(found))


def baseline_not_stock(plan: Plan | None, candidate: str, baseline: str) -> bool:
    """The plan declares the pair's baseline not a stock launch (verify's ``--policy`` stock check holds it to that)."""
    declared = plan.pairs or [] if plan is not None else []
    pair = next((p for p in declared if (p.candidate, p.baseline) == (candidate, baseline)), None)
    return pair is not None and not pair.baseline_is_stock


def _is_invalid(points: dict[tuple[str, str], PointSummary], server: str, point_id: str) -> bool:
    point = points.get((server, point_id))
    return point is None or not point.valid


def _invalid(summary: Summary) -> list[Caveat]:
    found = [
        Caveat("invalid point", (p.server,), voids=("validity",), point=p)  # a claim there is not checked already
        for p in summary.bench.points
        if not p.valid
    ]
    if not found:
        return []
    points = {(p.server, p.point_id): p for p in summary.bench.points}
    for candidate, baseline in compared_pairs(summary):
        ids = dict.fromkeys(c.point_id for c in summary.bench.comparisons if c.candidate == candidate)
        one_side = tuple(
            (pid, candidate if _is_invalid(points, candidate, pid) else baseline)
            for pid in ids
            if _is_invalid(points, candidate, pid) != _is_invalid(points, baseline, pid)
        )
        if one_side:
            found.append(Caveat("invalid on one side", (candidate, baseline), voids=("validity",), one_side=one_side))
    return found


def caveats(summary: Summary, servers: Sequence[ServerRecord], plan: Plan | None) -> list[Caveat]:
    """Every caveat of the bundle, in the order the first screen shows them."""
    found = []
    for record in servers:
        if flags(record).get(SYNTHETIC) == "synthetic":
            length = flags(record).get(SYNTHETIC_LENGTH)
            found.append(
                Caveat("synthetic acceptance", (record.name,), limits=("pair", "speed claim"), forced_length=length)
            )
    dummy = tuple(record.name for record in servers if is_dummy(record))
    if dummy:
        found.append(Caveat("dummy weights", dummy, voids=("accuracy",), limits=("pair", "speed claim")))
    if not summary.evals.verdicts and compared_pairs(summary):
        found.append(Caveat("accuracy not checked"))
    found += _invalid(summary)
    for integrity in summary.bench.wake_integrity:
        found += [
            Caveat(
                "wake integrity",
                (integrity.candidate, integrity.baseline),
                voids=("wake integrity",),
                integrity=integrity,
                changed=changed,
            )
            for changed in integrity.changed
        ]
    found += [
        Caveat("wake effect", (w.server,), voids=("validity",), limits=("speed claim",), wake_effect=w)
        for w in summary.bench.wake_effects
        if w.flagged
    ]
    found += [
        Caveat("baseline not stock", (candidate, baseline), limits=("pair", "speed claim"))
        for candidate, baseline in compared_pairs(summary)
        if baseline_not_stock(plan, candidate, baseline)
    ]
    return found
