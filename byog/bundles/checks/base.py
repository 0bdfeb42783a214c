"""The shape every verify check shares (cf. MLPerf's submission checker).

A check is a function ``(ctx) -> str | Found`` declared with ``@check("name")``: it returns one
sentence on success and raises ``CheckFailed`` (one sentence) on failure, or ``Skipped`` when it
has nothing to check; a check with more to say than a sentence (every claim's outcome) returns a
``Found``, which carries its details into ``verify --json``. Any other exception on hostile input
is still a failure, never a traceback; an ``EnvironmentProblem`` (something this machine lacks)
stops verify with exit 3.

Two flags place a check in verify's order (``byog.bundles.verify``):
- ``gated``: runs only once the signer is known and trusted (or the bundle is unsigned and
  ``--allow-unsigned`` was given); an untrusted bundle gets "not checked: untrusted signer";
- ``isolated``: parses bundle content, so it runs in the child process under memory and CPU
  limits (``byog.bundles.isolate``). Every isolated check is gated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from byog.bundles.bounds import CAPS, Caps, check_size
from byog.core.errors import ByogError, EnvironmentProblem
from byog.core.paths import RunDir
from byog.schemas.claims import ClaimsFile
from byog.schemas.manifest import BundleSubject, Statement
from byog.schemas.policy import Policy
from byog.schemas.summary import Summary

Status = Literal["pass", "fail", "skip"]
MESSAGE_LIMIT = 300  # characters of one check's sentence


class Skipped(Exception):
    """Raised by a check that has nothing to check (e.g. no --policy given)."""


Details = dict[str, list[str]]  # e.g. {"held": [...], "failed": [...], "not_checked": [...]}


@dataclass(frozen=True)
class Found:
    """A check's outcome with details: its sentence, whether it failed, and what it found item by item."""

    message: str
    failed: bool = False
    details: Details = field(default_factory=dict)


def counted(failures: list[str], noun: str) -> str:
    """A check's sentence for its failures: the failure itself when there is one, else how many and
    each numbered. The sentence is cut to MESSAGE_LIMIT; the full list travels as ``details["failed"]``,
    which ``byog verify`` prints one per line and ``--json`` carries whole: no failure goes unnamed."""
    if len(failures) == 1:
        return failures[0]
    return f"{len(failures)} {noun}: " + "; ".join(f"({i}) {text}" for i, text in enumerate(failures, 1))


@dataclass(frozen=True)
class CheckResult:
    name: str
    status: Status
    message: str
    details: Details | None = None  # what a check that returns a Found says beyond its sentence

    @property
    def ok(self) -> bool:
        return self.status != "fail"


def failure_list(result: CheckResult) -> list[str]:
    """Every failure a failed check named, when it named more than one (its sentence holds a single one)."""
    failed = (result.details or {}).get("failed") or []
    return [str(item) for item in failed] if result.status == "fail" and len(failed) > 1 else []


@dataclass
class VerifyContext:
    bundle: Path
    root: Path  # the private folder the bundle was extracted into
    names: list[str]  # member names, archive order
    sizes: dict[str, int] = field(default_factory=dict)  # member name -> bytes, from the vetted archive
    digests: dict[str, str] = field(default_factory=dict)  # member name -> sha256, computed while extracting
    held: dict[str, bytes] = field(default_factory=dict)  # member name -> bytes read before any file is written
    allowed_signers: Path | None = None
    policy: Policy | None = None
    claims: ClaimsFile | None = None
    allow_unsigned: bool = False
    subject_for: BundleSubject | None = None  # --for OWNER/REPO#N: the subject the bundle must name
    caps: Caps = CAPS
    plan_given: bytes | None = None  # --plan PATH: the plan file the bundle must have run
    plan_label: str = "the given plan"
    statement: Statement | None = None  # set by the manifest check
    manifest_bytes: bytes | None = None
    signer: str | None = None  # set by the signature check: "principal (SHA256:...)"
    unsigned_allowed: bool = False  # set by the signature check: unsigned, and --allow-unsigned given
    derived: Summary | None = None  # the recomputed summary
    derived_paired_t: Summary | None = None  # the same with every verdict by the paired t (recompute.stated_summary)
    parsed: dict[str, Any] = field(default_factory=dict)  # member name -> its JSON/YAML, parsed within bounds

    @property
    def run_dir(self) -> RunDir:
        return RunDir(self.root)

    def read(self, name: str) -> bytes:
        """A member's bytes, refused (CheckFailed) when over its kind's size cap."""
        if name in self.held:
            check_size(name, len(self.held[name]))
            return self.held[name]
        path = self.root / name
        check_size(name, path.stat().st_size)
        return path.read_bytes()

    @cached_property
    def _members(self) -> frozenset[str]:
        return frozenset(self.names)

    def has(self, name: str) -> bool:
        return name in self._members  # a set: checks ask once per member, of up to 10,000


CheckFn = Callable[[VerifyContext], "str | Found"]


@dataclass(frozen=True)
class Check:
    name: str
    fn: CheckFn
    requires: tuple[str, ...]  # checks that must have passed: numbers from unverified files mean nothing
    gated: bool  # runs only for a trusted signer (or an allowed unsigned bundle)
    isolated: bool  # parses content: runs in the limited child process

    def __call__(self, ctx: VerifyContext) -> str | Found:
        return self.fn(ctx)


def check(
    name: str, *, requires: tuple[str, ...] = (), gated: bool = True, isolated: bool = True
) -> Callable[[CheckFn], Check]:
    """Declare a check; ``byog.bundles.checks.CHECKS`` lists the checks verify runs, in order."""
    if isolated and not gated:
        raise ValueError(f"verify check '{name}': a check that parses content must wait for the signer (gated)")

    def declare(fn: CheckFn) -> Check:
        return Check(name, fn, requires, gated, isolated)

    return declare


def in_order(checks: tuple[Check, ...]) -> tuple[Check, ...]:
    """``checks`` as given, refused when a name repeats or a check requires one that does not run before it."""
    seen: set[str] = set()
    for item in checks:
        if item.name in seen:
            raise ValueError(f"verify check '{item.name}' is listed twice")
        missing = [dep for dep in item.requires if dep not in seen]
        if missing:
            raise ValueError(f"verify check '{item.name}' requires {', '.join(missing)}, which must run before it")
        seen.add(item.name)
    return checks


def _message(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else ""


def run_one(item: Check, ctx: VerifyContext, status: dict[str, Status]) -> CheckResult:
    """Run one check after its prerequisites; any exception but EnvironmentProblem becomes a failed line."""
    blocked = [dep for dep in item.requires if status.get(dep) != "pass"]
    if blocked:
        result = CheckResult(item.name, "skip", f"not checked: {', '.join(blocked)} did not pass")
    else:
        try:
            found = item.fn(ctx)
            if isinstance(found, Found):
                result = CheckResult(item.name, "fail" if found.failed else "pass", found.message, found.details)
            else:
                result = CheckResult(item.name, "pass", found)
        except Skipped as why:
            result = CheckResult(item.name, "skip", str(why))
        except EnvironmentProblem:
            raise
        except ByogError as err:
            result = CheckResult(item.name, "fail", str(err))
        except MemoryError:
            result = CheckResult(
                item.name, "fail", "could not be checked: it needs more memory than verify allows (a hostile bundle?)"
            )
        except RecursionError:
            result = CheckResult(item.name, "fail", "could not be checked: the data is nested too deeply")
        except Exception as err:  # hostile bytes can break any parser: a failure, not a crash
            result = CheckResult(item.name, "fail", f"could not be checked: {type(err).__name__}: {_message(err)}")
    result = replace(result, message=result.message[:MESSAGE_LIMIT])
    status[item.name] = result.status
    return result


def run_checks(
    ctx: VerifyContext, checks: Iterable[Check], status: dict[str, Status] | None = None
) -> list[CheckResult]:
    status = {} if status is None else status
    return [run_one(item, ctx, status) for item in checks]
