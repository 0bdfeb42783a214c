"""The answers a task's extraction could not read (``[invalid]``): how many per server and task, what the
extraction expected (the rule results.json records), and the server's raw output where items.parquet
kept it (item schema 2: ``byog.schemas.evals.EvalItemRow.raw_output``).

A file of item schema 1 has no raw output column: ``invalid_answers`` gives None for it, so what a
report shows of an older run does not change.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from byog.analysis.discordant import is_gated
from byog.core.errors import ByogError
from byog.core.io import read_json
from byog.core.paths import RunDir
from byog.schemas.evals import INVALID_ANSWER

RAW_COLUMNS = ("raw_output", "raw_output_chars")


@dataclass(frozen=True)
class RawAnswer:
    item_id: str
    pass_index: int
    text: str | None  # the response as kept (clipped); None: not kept
    chars: int | None  # the whole response's length in characters


@dataclass(frozen=True)
class InvalidAnswers:
    server: str
    task: str
    rows: int  # answers: items x passes
    gated: bool
    extraction: str | None  # the task's answer extraction as results.json records it
    answers: tuple[RawAnswer, ...]  # every [invalid] answer, by item id then pass

    @property
    def kept(self) -> tuple[RawAnswer, ...]:
        return tuple(a for a in self.answers if a.text is not None)


def extraction_rule(run_dir: RunDir, server: str, task: str) -> str | None:
    """What the task's extraction takes from a response (results.json ``task.answer_extraction``)."""
    try:
        rule = read_json(run_dir.eval_results(server, task))["task"].get("answer_extraction")
    except (OSError, KeyError, TypeError, AttributeError, ValueError):
        return None
    return rule if isinstance(rule, str) and rule else None


def invalid_answers(run_dir: RunDir, server: str, task: str) -> InvalidAnswers | None:
    """The [invalid] answers of ``task`` on ``server``; None when its items.parquet predates raw outputs."""
    import pyarrow.parquet as pq

    path = run_dir.eval_items(server, task)
    if not set(RAW_COLUMNS) <= set(pq.read_schema(path).names):
        return None
    columns = ["item_id", "pass_index", "extracted_answer", *RAW_COLUMNS]
    table = pq.ParquetFile(path).read(columns=columns, use_threads=False)
    answers = [
        RawAnswer(str(item), int(k), text, chars)
        for item, k, answer, text, chars in zip(*(table.column(c).to_pylist() for c in columns), strict=True)
        if answer == INVALID_ANSWER
    ]
    answers.sort(key=lambda a: (a.item_id, a.pass_index))
    gated = is_gated(run_dir, server, task)
    if gated:  # a bundle's gated task shows no text, whatever its file holds
        answers = [RawAnswer(a.item_id, a.pass_index, None, None) for a in answers]
    return InvalidAnswers(server, task, table.num_rows, gated, extraction_rule(run_dir, server, task), tuple(answers))


def with_invalid_answers(run_dir: RunDir, evals: Iterable[tuple[str, str]]) -> list[InvalidAnswers]:
    """Of the (server, task) evals, in their order, those whose items file keeps raw outputs and has at least
    one [invalid] answer (a file that cannot be read is left out: verify's recompute says why)."""
    found = []
    for server, task in evals:
        try:
            seen = invalid_answers(run_dir, server, task)
        except (OSError, ValueError, KeyError, ByogError):
            continue
        if seen is not None and seen.answers:
            found.append(seen)
    return found
