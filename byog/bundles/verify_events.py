"""What verify's content child tells the parent (``byog.bundles.isolate`` carries them as JSON lines).

One model per kind of event, told apart by ``event``; the parent parses each line once into
``ChildEvent`` and reads fields, never dict keys. The child writes only these, but its output is
still checked: a line that is not one of them is ignored (the parent never trusts what the child
read from the bundle).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from byog.bundles.checks.base import CheckResult, Details, Status


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Started(_Event):
    """A check began (so a child that dies is known to have died in it)."""

    event: Literal["start"] = "start"
    name: str


class Finished(_Event):
    event: Literal["result"] = "result"
    name: str
    status: Status
    message: str
    details: Details | None = None

    def result(self) -> CheckResult:
        return CheckResult(self.name, self.status, self.message, self.details)


class Comment(_Event):
    """The PR comment, rendered from the verified bundle."""

    event: Literal["comment"] = "comment"
    text: str


class FirstScreen(_Event):
    """The setup and warning lines verify prints above its checks (plain text)."""

    event: Literal["first_screen"] = "first_screen"
    lines: list[str]


class Written(_Event):
    """The report files written (``verify --report-to``)."""

    event: Literal["written"] = "written"
    files: list[str]


class Reproduced(_Event):
    """The bundle's reproduction.json as the child read it (within bounds); the parent validates it again."""

    event: Literal["reproduction"] = "reproduction"
    record: dict[str, Any] | None = None  # None: the bundle holds no reproduction
    signer_fingerprint: str | None = None
    servers: list[dict[str, Any]] = []


class RenderFailed(_Event):
    """Every check passed, but the comment or report could not be rendered: why, in one line."""

    event: Literal["render_error"] = "render_error"
    message: str


class MachineLacks(_Event):
    """Something this machine lacks (an EnvironmentProblem): verify exits 3."""

    event: Literal["environment"] = "environment"
    message: str


ChildEvent = Annotated[
    Started | Finished | Comment | FirstScreen | Written | Reproduced | RenderFailed | MachineLacks,
    Field(discriminator="event"),
]
_ADAPTER: TypeAdapter[ChildEvent] = TypeAdapter(ChildEvent)


def parse_events(raw: list[dict[str, Any]]) -> list[ChildEvent]:
    """The child's JSON objects as events, in order; one that is not an event is left out."""
    events = []
    for item in raw:
        try:
            events.append(_ADAPTER.validate_python(item))
        except ValidationError:
            continue
    return events
