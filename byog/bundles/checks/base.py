"""The shape every verify check shares (cf. MLPerf's submission checker).

A check is a function ``(ctx) -> str`` registered with ``@check("name")``: it returns one
sentence on success and raises ``CheckFailed`` (one sentence) on failure, or ``Skipped`` when it
has nothing to check. Any other exception on hostile input is still a failure, never a
traceback; an ``EnvironmentProblem`` (no ssh-keygen) stops verify with exit 3.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

from byog.bundles.rundir import RunDir
from byog.errors import ByogError, EnvironmentProblem
from byog.schemas.claims import ClaimsFile
from byog.schemas.manifest import Statement
from byog.schemas.policy import Policy

Status = Literal["pass", "fail", "skip"]


class Skipped(Exception):
    """Raised by a check that has nothing to check (e.g. no --policy given)."""


@dataclass(frozen=True)
class CheckResult:
    name: str
    status: Status
    message: str

    @property
    def ok(self) -> bool:
        return self.status != "fail"


@dataclass
class VerifyContext:
    bundle: Path
    root: Path  # the private folder the bundle was extracted into
    names: list[str]  # member names, archive order
    allowed_signers: Path | None = None
    policy: Policy | None = None
    claims: ClaimsFile | None = None
    allow_unsigned: bool = False
    derive_summary: Callable[[RunDir], dict[str, Any]] | None = None  # None: byog.bundles.summary.derive_summary
    statement: Statement | None = None  # set by the manifest check
    manifest_bytes: bytes | None = None
    signer: str | None = None  # set by the signature check: "principal (SHA256:...)"
    derived: dict[str, Any] | None = None  # the recomputed summary
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def run_dir(self) -> RunDir:
        return RunDir(self.root)

    def read(self, name: str) -> bytes:
        return (self.root / name).read_bytes()

    def has(self, name: str) -> bool:
        return name in self.names


CheckFn = Callable[[VerifyContext], str]


@dataclass(frozen=True)
class Check:
    name: str
    fn: CheckFn
    requires: tuple[str, ...]  # checks that must have passed: numbers from unverified files mean nothing


CHECKS: list[Check] = []


def check(name: str, *, requires: tuple[str, ...] = ()) -> Callable[[CheckFn], CheckFn]:
    def register(fn: CheckFn) -> CheckFn:
        if any(existing.name == name for existing in CHECKS):
            raise ValueError(f"verify check '{name}' is registered twice")
        CHECKS.append(Check(name, fn, requires))
        return fn

    return register


def run_checks(ctx: VerifyContext) -> list[CheckResult]:
    results: list[CheckResult] = []
    status: dict[str, Status] = {}
    for item in CHECKS:
        name, fn = item.name, item.fn
        blocked = [dep for dep in item.requires if status.get(dep) != "pass"]
        if blocked:
            results.append(CheckResult(name, "skip", f"not checked: {', '.join(blocked)} did not pass"))
            status[name] = "skip"
            continue
        try:
            results.append(CheckResult(name, "pass", fn(ctx)))
        except Skipped as why:
            results.append(CheckResult(name, "skip", str(why)))
        except EnvironmentProblem:
            raise
        except ByogError as err:
            results.append(CheckResult(name, "fail", str(err)))
        except Exception as err:  # hostile bytes can break any parser: a failure, not a crash
            message = str(err).strip().splitlines()[0] if str(err).strip() else ""
            results.append(CheckResult(name, "fail", f"could not be checked: {type(err).__name__}: {message}"[:300]))
        status[name] = results[-1].status
    return results
