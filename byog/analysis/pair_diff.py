"""One pair's comparison: what each side asked (argv, env), ran (identity) and resolved (/server_info).

The resolved differences (``byog.analysis.resolved_diff``) are the facts; the asked ones explain
them: an asked difference with a resolved counterpart is that group, one whose field vLLM resolved
the same on both sides is said so ("asked, resolved the same"), and one vLLM's config does not
hold (a front-end flag such as ``--enable-prompt-tokens-details``) stays an asked fact. A side
whose resolved config or identity is unknown makes the pair unknown: nothing it lacks is equal.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from byog.analysis.launch_diff import (
    Difference,
    asked_facts,
    digest_contradictions,
    identity_facts,
    launch_differences,
)
from byog.analysis.resolved_diff import Group, IgnoreWhen, changes, group, resolved_facts
from byog.schemas.env import EnvRecord
from byog.schemas.plan import ComparisonPair
from byog.schemas.server import ServerRecord


def missing(name: str, record: ServerRecord) -> list[str]:
    """What of a side is unknown, one phrase each ("server 'x' has no resolved config: ..."); [] when known."""
    endpoint = " (an endpoint: byog did not launch it)" if record.argv is None else ""
    found = []
    resolved = record.resolved
    if resolved is None:
        found.append(f"server '{name}' has no resolved config (none recorded){endpoint}")
    elif resolved.server_info is None:
        found.append(f"server '{name}' has no resolved config ({resolved.unknown or 'not recorded'}){endpoint}")
    identity = record.identity
    if identity is None or identity.error or identity.vllm is None or identity.vllm.error:
        why = (identity.error or (identity.vllm.error if identity.vllm else None)) if identity else None
        found.append(f"server '{name}' has no identity{f' ({why})' if why else ''}{endpoint}")
    return found


@dataclass
class PairDiff:
    unknown: list[str] = field(default_factory=list)
    identity: list[Difference] = field(default_factory=list)  # image, code, weights, tokenizer, hardware, gpus
    groups: list[Group] = field(default_factory=list)  # what vLLM resolved differently, by cause
    asked_only: list[Difference] = field(default_factory=list)  # asked differently; vLLM's config does not hold it
    resolved_same: list[Difference] = field(default_factory=list)  # asked differently, resolved the same
    contradictions: list[str] = field(default_factory=list)  # a digest its own per-file hashes deny
    asked: list[Difference] = field(default_factory=list)  # every asked difference, as the command lines say

    def facts(self) -> list[tuple[str, str]]:
        """(key, label) of every difference a policy or the pair's declaration judges."""
        return [
            *((d.key, d.label) for d in self.identity),
            *((g.key, g.label) for g in self.groups),
            *((d.key, d.label) for d in self.asked_only),
        ]


def _agree(candidate: dict[str, str], baseline: dict[str, str]) -> set[IgnoreWhen]:
    agree = set()
    if all(candidate.get(k) == baseline.get(k) for k in ("weights", "tokenizer")):
        agree.add(IgnoreWhen.WEIGHTS_AGREE)
    if candidate.get("gpus") == baseline.get("gpus") and "unknown" not in candidate.get("gpus", "unknown"):
        agree.add(IgnoreWhen.GPUS_AGREE)
    return agree


def _placed(asked: Difference, groups: list[Group], resolved: dict[str, str]) -> str:
    """'group', 'same' (vLLM resolved that field the same on both sides) or 'asked' (its config has none)."""
    if any(g.key == asked.key for g in groups):
        return "group"
    if asked.key.startswith("--"):
        leaf = asked.key[2:].replace("-", "_")
        return "same" if any(k.startswith("config.") and k.rsplit(".", 1)[-1] == leaf for k in resolved) else "asked"
    key = asked.key if asked.key.startswith("env.") else f"config.{asked.key}"
    return "same" if key in resolved else "asked"


def compare_pair(names: tuple[str, str], records: tuple[ServerRecord, ServerRecord], host: EnvRecord) -> PairDiff:
    """Compare a pair's (candidate, baseline) records; see the module docstring."""
    (cand_name, base_name), (cand, base) = names, records
    asked = launch_differences(asked_facts(cand), asked_facts(base))
    ran = identity_facts(cand, host), identity_facts(base, host)
    diff = PairDiff(
        unknown=missing(cand_name, cand) + missing(base_name, base),
        identity=launch_differences(*ran),
        contradictions=digest_contradictions(cand_name, cand.identity)
        + digest_contradictions(base_name, base.identity),
        asked=asked,
    )
    resolved = resolved_facts(cand), resolved_facts(base)
    if resolved[0] is None or resolved[1] is None:
        return diff
    asked_keys = {d.key for d in asked}
    diff.groups = group(changes(resolved[0], resolved[1], _agree(*ran)), asked_keys)
    both = {**resolved[1], **resolved[0]}
    for difference in asked:
        placed = _placed(difference, diff.groups, both)
        if placed == "same":
            diff.resolved_same.append(difference)
        elif placed == "asked":
            diff.asked_only.append(difference)
    return diff


def pair_line(pair: ComparisonPair, diff: PairDiff) -> str:
    """What the pair differs in, as verify's ``pairs`` check and the report's setup line say it."""
    stock = "" if pair.baseline_is_stock else " (the plan says the baseline is not stock)"
    if diff.unknown:
        asked = "; ".join(d.label for d in diff.asked)
        return (
            f"{pair.candidate} vs {pair.baseline}: unknown: cannot check ({'; '.join(diff.unknown)})"
            + (f"; asked: {asked}" if asked else "")
            + stock
        )
    shown = [*(d.label for d in diff.identity), *(g.label for g in diff.groups)]
    shown += [f"{d.label} (asked; not in vLLM's resolved config)" for d in diff.asked_only]
    same = "; ".join(d.label for d in diff.resolved_same)
    return (
        f"{pair.candidate} differs from {pair.baseline} in: {'; '.join(shown) or 'nothing'}"
        + (f"; asked, but vLLM resolved the same: {same}" if same else "")
        + stock
    )
