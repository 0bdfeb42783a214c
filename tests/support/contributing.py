"""The CPU walkthrough of docs/contributing.md, as tests read it: its checked block's commands, and the
fields of a plan a run measures (what makes two plans the same run)."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

from byog.plans.tiers import apply_tier
from byog.schemas.plan import Plan
from tests.support.cli import byog_without_terminal

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "contributing.md"
CHECKED = "<!-- checked:"
# everything of a plan a run measures: two plans equal in these launch the same servers and run the same points
MEASURED = {"model", "servers", "baseline", "pairs", "workloads", "evals", "seeds", "launches", "aa_pair", "numerics"}


def checked_commands(guide: Path = GUIDE) -> list[list[str]]:
    """The commands of the fenced block after the guide's ``<!-- checked: ... -->`` marker, split as a shell would."""
    text = guide.read_text(encoding="utf-8")
    block = re.search(re.escape(CHECKED) + r".*?-->\s*```bash\n(.*?)```", text, re.S)
    assert block is not None, f"{guide} has no checked block"
    return [shlex.split(line) for line in block.group(1).splitlines() if line.strip()]


def measured(plan: Plan, tier: str = "full") -> dict[str, Any]:
    return apply_tier(plan, tier).model_dump(include=MEASURED)


def run_guide_command(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """One ``byog ...`` line of the guide, as a script runs it: stdin not a terminal, so nothing is asked."""
    assert command[0] == "byog", command
    return byog_without_terminal(*command[1:], cwd=cwd)
