"""Looks in lockstep: two servers whose evals run at once (``byog.pipeline.evals_at_once``), each in a
process of its own, or in turns on one GPU (an interleaved pair, ``byog.pipeline.eval_turns``), run a
task with looks in the same look-sized chunks and judge the same paired gate on the same items at each
look, so both stop at the same look (or both run on).

The run directory's records are the channel, as they are the truth:

- each server writes a look's rows (every pass) to ``evals/<server>/<task>/.looks/look-<k>.json``,
  atomically, after the look's last pass: a partial look is never on disk (the dot folder keeps these
  working files out of a bundle; items.parquet and results.json stay the records);
- before judging look k each waits for the partner's look-k file, or the partner's complete records of
  the task (it stopped earlier for every pair it is in, or ran the task before);
- where the partner's eval process has ended without either (it failed, was killed, was interrupted),
  the waiting side gives the looks up and runs every item, the fallback that needs no partner, and its
  record says so;
- a rerun reads its own look files back instead of running those items again;
- in turns, a side never waits: where the partner has not run the look yet, the side's turn is over
  (``TurnOver``) and its server can sleep while the partner's runs up to there; its next turn reads its
  own looks back and judges them with the partner's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from byog.analysis.eval_summary import item_scores, passes_of, scores_of
from byog.core.io import atomic_write_json, read_json
from byog.core.paths import RunDir

POLL_S = 0.2  # how often a waiting side looks for the partner's look on disk


@dataclass(frozen=True)
class Partner:
    """The server whose evals run at once with this one's, and how to tell its eval process has ended;
    ``in_turns``: the two take turns on one GPU instead."""

    server: str
    gone: Callable[[], bool]
    in_turns: bool = False


class TurnOver(Exception):
    """In turns: this side has run its part of a look that its partner has not run yet."""

    def __init__(self, server: str, task: str, look: int, partner: str) -> None:
        super().__init__(f"{task} look {look} done; {partner}'s turn (the same looks, in turns on one GPU)")
        self.server, self.task, self.look, self.partner = server, task, look, partner


class Lockstep:
    """One server's side of one task's looks in lockstep with its partner."""

    def __init__(self, run_dir: RunDir, task: str, server: str, partner: Partner) -> None:
        self.run_dir, self.task, self.server, self.partner = run_dir, task, server, partner
        self.look = 0  # the partner's looks in hand: 1..look (or its complete records)

    def saved(
        self, look: int, docs: list[int] | None, seeds: list[int]
    ) -> tuple[list[dict[str, Any]], Any, float] | None:
        """This server's rows, runner facts and seconds of running ``look`` from an earlier attempt (or
        turn); None where it has none for these items and passes."""
        path = self.run_dir.eval_look(self.server, self.task, look)
        if not path.is_file():
            return None
        found = read_json(path)
        if found.get("docs") != docs or found.get("seeds") != seeds:
            return None
        return found["rows"], found["runner"], float(found.get("wall_s", 0.0))

    def save(
        self,
        look: int,
        docs: list[int] | None,
        seeds: list[int],
        rows: list[dict[str, Any]],
        runner: Any,
        wall_s: float,
    ) -> None:
        path = self.run_dir.eval_look(self.server, self.task, look)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(path, {"docs": docs, "seeds": seeds, "rows": rows, "runner": runner, "wall_s": wall_s})

    def wait(self, look: int, status: Callable[[str], None]) -> bool:
        """Until the partner's rows of ``look`` (or its complete records) are on disk: True; False where
        its eval process ended without them. In turns, ``TurnOver`` instead of waiting."""
        said = False
        while True:
            gone = self.partner.gone()  # read first: a process that wrote its look and then ended counts
            if self._partner_complete() or self.run_dir.eval_look(self.partner.server, self.task, look).is_file():
                self.look = look
                return True
            if gone:
                return False
            if self.partner.in_turns:
                raise TurnOver(self.server, self.task, look, self.partner.server)
            if not said:
                status(f"{self.task}: look {look}: waiting for {self.partner.server}'s items of the look")
                said = True
            time.sleep(POLL_S)

    def gave_up(self, look: int) -> str:
        return (
            f"every item ran: the evals of {self.partner.server}, run at once in the same looks, ended before "
            f"its look {look}"
        )

    def partner_scores(self) -> tuple[dict[tuple[str, str], float], int]:
        """The partner's item scores (points) and passes so far: its looks 1..``look``, or its records."""
        if self._partner_complete():
            return item_scores(self.run_dir, self.partner.server, self.task), passes_of(
                self.run_dir, self.partner.server, self.task
            )
        rows = [
            row
            for k in range(1, self.look + 1)
            for row in read_json(self.run_dir.eval_look(self.partner.server, self.task, k))["rows"]
        ]
        scores = scores_of((r["item_id"], r["item_sha256"], r["score"]) for r in rows)
        return scores, len({r["pass_index"] for r in rows})

    def _partner_complete(self) -> bool:
        return self.run_dir.eval_complete(self.partner.server, self.task)
