"""Tasks: every eval task a bundle's plan names, and every task its eval results are filed under, is byog's.

A task name outside byog's registry (``byog.plans.tasks``) says nothing a reader can look up:
no pinned dataset, prompt format or answer extraction (and ``/etc/passwd`` is a path, not a
task). Such a bundle fails here rather than being planned by ``byog reproduce``. It parses
plan.yaml, so it runs after the schemas check, in the limited child process.
"""

from __future__ import annotations

from byog.bundles.checks.base import VerifyContext, check
from byog.core.errors import CheckFailed
from byog.core.safe_text import one_line
from byog.plans.tasks import TASKS


def _named_tasks(ctx: VerifyContext) -> list[str]:
    """The plan's eval tasks, then the task folders of evals/<server>/<task>/."""
    plan = ctx.parsed.get("plan.yaml")
    evals = plan.get("evals") if isinstance(plan, dict) else None
    named = [str(e.get("task")) for e in evals or [] if isinstance(e, dict)]
    named += [parts[2] for parts in (n.split("/") for n in ctx.names) if len(parts) > 3 and parts[0] == "evals"]
    return list(dict.fromkeys(named))


@check("tasks", requires=("schemas",))
def tasks_are_byogs(ctx: VerifyContext) -> str:
    named = _named_tasks(ctx)
    unknown = [task for task in named if task not in TASKS]
    if unknown:
        raise CheckFailed(
            f"the bundle's eval task '{one_line(unknown[0], 80)}' is not in byog's registry "
            f"({', '.join(sorted(TASKS))}), so nothing says what it measures"
        )
    return f"eval tasks {', '.join(named)} are byog's" if named else "no eval tasks"
