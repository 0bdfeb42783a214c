"""policy.yaml's engine settings: a waiver needs forbid_engine_patches, and names a full sha256."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from byog.schemas.policy import Policy

SHA = "f" * 64


def test_a_waiver_without_the_prohibition_waives_nothing() -> None:
    with pytest.raises(ValidationError, match="engine_patch_waivers waive nothing without forbid_engine_patches"):
        Policy.model_validate({"engine_patch_waivers": {"vllm/x.py": SHA}, "forbid_degenerate": True})
    with pytest.raises(ValidationError, match="should match pattern"):
        Policy.model_validate({"forbid_engine_patches": True, "engine_patch_waivers": {"vllm/x.py": "sha256:abc"}})
    found = Policy.model_validate({"forbid_engine_patches": True, "engine_patch_waivers": {"vllm/x.py": SHA}})
    assert found.engine_patch_waivers == {"vllm/x.py": SHA}
