"""The plan pin: which plan file a run started from, and whether a given plan file is that plan.

Two digests: of the file's bytes as given (any edit, a comment included, changes it) and of its
canonical form (the file's YAML as RFC 8785 JSON: the same plan written with other comments,
order of keys or quoting gives the same digest). ``byog verify --plan PATH`` accepts either, and
also re-derives plan.yaml from PATH (cut to the recorded tier), so a pin cannot name one plan
while the bundle ran another.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import yaml

from byog.core.canonical import canonical_json
from byog.core.errors import ByogError, CheckFailed
from byog.plans.load import parse_plan, plan_text_of
from byog.plans.tiers import apply_tier, tiered_plan_yaml
from byog.schemas.plan_pin import PLAN_PIN_NAME, PlanPin


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def canonical_sha256(doc: Any) -> str:
    """sha256 of the parsed YAML as canonical JSON; YAML's dates and other non-JSON scalars as their text."""
    return sha256_hex(canonical_json(json.loads(json.dumps(doc, default=str)), label="the plan"))


def make_pin(source: str, data: bytes, doc: Any, tier: str, plan_yaml: str) -> PlanPin:
    """The pin of the plan file ``data`` (parsed: ``doc``) as the run records it before it starts."""
    return PlanPin(
        source=source[:512],
        file_sha256=sha256_hex(data),
        canonical_sha256=canonical_sha256(doc),
        tier=tier,
        plan_yaml_sha256=sha256_hex(plan_yaml.encode("utf-8")),
    )


def recorded_plan_yaml(data: bytes, label: str, tier: str) -> str:
    """The plan.yaml a run of the plan file ``data`` at ``tier`` records (``byog.pipeline.opening``)."""
    text = plan_text_of(data, label)
    if tier == "full":
        return text
    return tiered_plan_yaml(apply_tier(parse_plan(text, label), tier))


def pins_plan_yaml(pin: PlanPin, plan_yaml: bytes) -> None:
    """CheckFailed unless the pin names this plan.yaml (what the run recorded and verify re-derives from)."""
    if sha256_hex(plan_yaml) != pin.plan_yaml_sha256:
        raise CheckFailed(f"{PLAN_PIN_NAME} does not pin the bundle's plan.yaml (its plan_yaml_sha256 differs)")


def hold_to_pin(pin: PlanPin, plan_yaml: bytes, plan_yaml_doc: Any, given: bytes, given_doc: Any, label: str) -> str:
    """One sentence saying the bundle ran the plan file ``given``; CheckFailed (one sentence) when it did not.

    ``plan_yaml_doc`` and ``given_doc``: the two files parsed (within bounds, by the caller).
    """
    pins_plan_yaml(pin, plan_yaml)
    file_digest, canonical_digest = sha256_hex(given), canonical_sha256(given_doc)
    if pin.canonical_sha256 != canonical_digest:
        raise CheckFailed(
            f"the bundle did not run {label}: the run pinned sha256 {pin.file_sha256[:12]} "
            f"(canonical {pin.canonical_sha256[:12]}), the file has {file_digest[:12]} "
            f"(canonical {canonical_digest[:12]})"
        )
    # The pin is the contributor's to write: plan.yaml (what verify re-derives the run from) must be this plan too.
    try:
        rederived = yaml.safe_load(recorded_plan_yaml(given, label, pin.tier))
    except ByogError as err:
        raise CheckFailed(f"{label} cannot be loaded as a plan at tier {pin.tier!r}: {err}") from None
    if canonical_sha256(rederived) != canonical_sha256(plan_yaml_doc):
        raise CheckFailed(f"the bundle's plan.yaml is not what {label} gives at tier {pin.tier!r}")
    if pin.file_sha256 == file_digest:
        return f"ran {label} byte for byte (sha256 {file_digest[:16]}…, tier {pin.tier})"
    return (
        f"ran {label}: the same canonical plan (sha256 {canonical_digest[:16]}…, tier {pin.tier}); "
        "the file differs only in comments or layout"
    )
