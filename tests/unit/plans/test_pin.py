"""The plan pin: digests of the plan file as given and as canonical JSON, and holding a file to a pin."""

from __future__ import annotations

import pytest
import yaml

from byog.core.errors import CheckFailed
from byog.plans.load import plan_source
from byog.plans.pin import canonical_sha256, hold_to_pin, make_pin, recorded_plan_yaml, sha256_hex

PLAN = (
    b"# the PR's plan\nname: synthetic\nmodel:\n  path: builtin:smollm2-135m-instruct\n  max_model_len: 4096\n"
    b"servers:\n  candidate:\n    runtime: local\n  baseline:\n    runtime: local\n"
    b"baseline: baseline\nworkloads:\n  - kind: batch\n    name: decode\n    batch_sizes: [1, 4]\n"
    b"    isl: [8]\n    osl: [8]\nseeds: [1]\n"
)


def pinned(data: bytes, tier: str = "full") -> tuple[bytes, object, object]:
    text = recorded_plan_yaml(data, "plan.yaml", tier)
    pin = make_pin("plan.yaml", data, yaml.safe_load(data), tier, text)
    return text.encode(), yaml.safe_load(text), pin


def test_the_pin_names_the_file_bytes_and_the_canonical_plan() -> None:
    recorded, _, pin = pinned(PLAN)
    assert recorded == PLAN  # a full-tier run records the file verbatim
    assert pin.file_sha256 == sha256_hex(PLAN) == pin.plan_yaml_sha256
    relaid = b"# another comment\n" + PLAN.replace(b"batch_sizes: [1, 4]", b"batch_sizes:\n      - 1\n      - 4")
    assert canonical_sha256(yaml.safe_load(relaid)) == pin.canonical_sha256 != sha256_hex(relaid)


def test_the_same_file_passes_and_a_relaid_one_passes_as_canonical() -> None:
    recorded, doc, pin = pinned(PLAN)
    assert "byte for byte" in hold_to_pin(pin, recorded, doc, PLAN, yaml.safe_load(PLAN), "p.yaml")
    crlf = PLAN.replace(b"\n", b"\r\n")  # a Windows checkout of the same file
    assert "only in comments or layout" in hold_to_pin(pin, recorded, doc, crlf, yaml.safe_load(crlf), "p.yaml")


def test_an_edited_plan_fails_in_one_sentence() -> None:
    recorded, doc, pin = pinned(PLAN)
    edited = PLAN.replace(b"batch_sizes: [1, 4]", b"batch_sizes: [1, 8]")
    with pytest.raises(
        CheckFailed, match=r"^the bundle did not run p\.yaml: the run pinned sha256 [0-9a-f]{12} "
    ) as err:
        hold_to_pin(pin, recorded, doc, edited, yaml.safe_load(edited), "p.yaml")
    assert "\n" not in str(err.value)


def test_a_pin_that_names_another_plan_than_plan_yaml_fails() -> None:
    # The contributor ran plan A but pinned the PR's plan B: plan.yaml (what verify re-derives from) gives it away.
    other = PLAN.replace(b"batch_sizes: [1, 4]", b"batch_sizes: [1, 8]")
    recorded, doc, _ = pinned(other)
    lying = make_pin("plan.yaml", PLAN, yaml.safe_load(PLAN), "full", recorded.decode())
    with pytest.raises(CheckFailed, match="plan.yaml is not what p.yaml gives"):
        hold_to_pin(lying, recorded, doc, PLAN, yaml.safe_load(PLAN), "p.yaml")
    _, _, pin = pinned(PLAN)
    with pytest.raises(CheckFailed, match="does not pin the bundle's plan.yaml"):
        hold_to_pin(pin, recorded, doc, PLAN, yaml.safe_load(PLAN), "p.yaml")


def test_a_tiered_run_is_held_to_the_file_it_was_cut_from() -> None:
    _, data = plan_source("smoke")
    recorded, doc, pin = pinned(data, tier="smoke")
    assert recorded != data and pin.tier == "smoke"
    assert "byte for byte" in hold_to_pin(pin, recorded, doc, data, yaml.safe_load(data), "smoke.yaml")


def test_a_hostile_pins_tier_is_one_sentence() -> None:
    recorded, doc, pin = pinned(PLAN)
    bogus = pin.model_copy(update={"tier": "bogus"})
    with pytest.raises(CheckFailed, match=r"^p\.yaml cannot be loaded as a plan at tier 'bogus': unknown tier"):
        hold_to_pin(bogus, recorded, doc, PLAN, yaml.safe_load(PLAN), "p.yaml")
