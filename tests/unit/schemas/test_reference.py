"""The reference pages (docs/reference/*.md) are generated from the models: a drift fails here."""

from __future__ import annotations

import pytest

from byog.plans.load import parse_plan
from byog.schemas.reference import (
    EXAMPLES_DIR,
    FORMATS,
    MEANINGS,
    REFERENCE_DIR,
    expected_pages,
    field_comments,
    models_of,
)


def test_the_reference_pages_match_the_models() -> None:
    for name, text in expected_pages().items():
        page = REFERENCE_DIR / name
        assert page.is_file() and page.read_text(encoding="utf-8") == text, (
            f"docs/reference/{name} is out of date: python -m byog.schemas.reference"
        )


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_field_says_what_it_means(fmt: str) -> None:
    root, _ = FORMATS[fmt]
    silent = [
        f"{model.__name__}.{name}"
        for model in models_of(root)
        for name in model.model_fields
        if name not in field_comments(model) and name not in MEANINGS
    ]
    assert not silent, f"give these a comment in the model: {silent}"


def test_the_plan_example_loads_as_a_plan() -> None:
    text = (EXAMPLES_DIR / "plan.yaml").read_text(encoding="utf-8")
    plan = parse_plan(text, "docs/reference/examples/plan.yaml")
    assert {w.kind for w in plan.workloads} == {"batch", "concurrency", "rate", "agentic"}
    assert {c.runtime for c in plan.servers.values()} == {"local", "docker", "endpoint"}
