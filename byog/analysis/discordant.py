"""The items that flipped: per task and candidate/baseline pair, every item the two servers scored
differently, with what each side answered.

The same pairing as the verdict (``byog.analysis.eval_summary``: by item id and item sha256, per-item
score = mean over passes), so the count here is the verdict's ``discordant``. An item is
"✓→✗" when the baseline scored it higher than the candidate (the candidate lost it) and "✗→✓"
the other way.

What is shown comes from ``items.parquet`` (the extracted answers and the short gold answer) and,
for the prompt's start, only from datasets byog ships itself (``byog/datasets``), matched by the
item's sha256: the text is then the same on every machine, so a re-rendered report stays byte for
byte. A gated task's rows (GPQA) never appear in plain text: its items keep only ids, hashes and
scores, and so does this view (``gated``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from byog.analysis.eval_summary import item_scores
from byog.core.io import read_json, row_sha256
from byog.core.paths import RunDir
from byog.core.settings import PACKAGED_DATASETS
from byog.plans.tasks import TASKS

PROMPT_FIELDS = ("question", "prompt", "problem", "input")  # a packaged row's prompt, first found


@dataclass(frozen=True)
class ItemSide:
    score: float  # points 0-100: mean over passes
    answers: tuple[str | None, ...]  # the extracted answer of each pass, in pass order (empty when gated)
    raw_outputs: tuple[str | None, ...] = ()  # each pass's raw output where kept ([invalid] answers; never gated)


@dataclass(frozen=True)
class DiscordantItem:
    item_id: str
    item_sha256: str
    target: str | None  # the short gold answer (None when gated or long text)
    prompt: str | None  # the prompt's text where byog ships the row, else None
    candidate: ItemSide
    baseline: ItemSide

    @property
    def lost(self) -> bool:
        """✓→✗: the baseline scored it higher than the candidate."""
        return self.candidate.score < self.baseline.score


@dataclass(frozen=True)
class DiscordantItems:
    task: str
    candidate: str
    baseline: str
    gated: bool
    n: int  # items both servers scored
    items: tuple[DiscordantItem, ...]  # ordered: lost first, then by item id

    @property
    def lost(self) -> int:
        return sum(1 for item in self.items if item.lost)

    @property
    def won(self) -> int:
        return len(self.items) - self.lost

    def flipped_line(self) -> str:
        """ "17 items flipped: 12 ✓→✗, 5 ✗→✓" (✓→✗: the baseline's right answer, the candidate's wrong one)."""
        noun = "item" if len(self.items) == 1 else "items"
        return f"{len(self.items)} {noun} flipped: {self.lost} ✓→✗, {self.won} ✗→✓"


def is_gated(run_dir: RunDir, server: str, task: str) -> bool:
    """Gated when byog's registry says so, when the run's results.json says so, or when neither
    knows the task (a name byog does not know is not shown in plain text)."""
    known = TASKS.get(task)
    if known is not None and known.dataset.gated:
        return True
    try:
        recorded = read_json(run_dir.eval_results(server, task))["task"].get("gated")
    except (OSError, KeyError, TypeError, AttributeError, ValueError):
        recorded = None
    if recorded is True:
        return True
    return known is None and recorded is not False


@dataclass(frozen=True)
class Answers:
    answers: tuple[str | None, ...]  # the extracted answer of each pass, in pass order
    target: str | None
    raw_outputs: tuple[str | None, ...]  # each pass's raw output where items.parquet kept one (item schema 2)


NO_ANSWERS = Answers((), None, ())  # an item one side has no row of


def item_answers(run_dir: RunDir, server: str, task: str) -> dict[tuple[str, str], Answers]:
    """(item_id, item_sha256) -> the item's answers. Never for a gated task."""
    import pyarrow.parquet as pq

    path = run_dir.eval_items(server, task)
    columns = ["item_id", "item_sha256", "pass_index", "extracted_answer", "target"]
    raw = "raw_output" in pq.read_schema(path).names
    table = pq.ParquetFile(path).read(columns=[*columns, "raw_output"] if raw else columns, use_threads=False)
    outputs = table.column("raw_output").to_pylist() if raw else [None] * table.num_rows
    rows: dict[tuple[str, str], list[tuple[int, str | None, str | None, str | None]]] = {}
    for item_id, sha, k, answer, target, output in zip(
        *(table.column(c).to_pylist() for c in columns), outputs, strict=True
    ):
        rows.setdefault((item_id, sha), []).append((int(k), answer, target, output))
    out = {}
    for key, passes in rows.items():
        passes.sort(key=lambda p: p[0])
        out[key] = Answers(tuple(p[1] for p in passes), passes[0][2], tuple(p[3] for p in passes))
    return out


@cache
def _packaged_prompts(relative: str) -> dict[str, str]:
    """item_sha256 -> prompt text of a dataset file byog ships (empty when it has none)."""
    path = (PACKAGED_DATASETS / relative).resolve()
    if PACKAGED_DATASETS.resolve() not in path.parents or not path.is_file() or path.suffix != ".jsonl":
        return {}
    found: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        text = next((row[f] for f in PROMPT_FIELDS if isinstance(row.get(f), str)), None)
        if text is not None:
            found[row_sha256(row)] = text
    return found


def prompts_for(task: str) -> dict[str, str]:
    """item_sha256 -> prompt for a task whose rows byog ships (generated data), else empty."""
    known = TASKS.get(task)
    if known is None or not known.dataset.generated or known.dataset.gated:
        return {}
    found: dict[str, str] = {}
    for relative in known.dataset.splits.values():
        found.update(_packaged_prompts(relative))
    return found


def discordant_items(run_dir: RunDir, task: str, candidate: str, baseline: str) -> DiscordantItems:
    """Every item of ``task`` the two servers scored differently (paired as the verdict pairs them)."""
    cand, base = item_scores(run_dir, candidate, task), item_scores(run_dir, baseline, task)
    keys = sorted(set(cand) & set(base))
    gated = is_gated(run_dir, candidate, task) or is_gated(run_dir, baseline, task)
    flipped = [k for k in keys if cand[k] != base[k]]
    items: list[DiscordantItem] = []
    if flipped:
        cand_answers = {} if gated else item_answers(run_dir, candidate, task)
        base_answers = {} if gated else item_answers(run_dir, baseline, task)
        prompts = {} if gated else prompts_for(task)
        for key in flipped:
            c_side, b_side = cand_answers.get(key, NO_ANSWERS), base_answers.get(key, NO_ANSWERS)
            items.append(
                DiscordantItem(
                    item_id=key[0],
                    item_sha256=key[1],
                    target=None if gated else c_side.target,
                    prompt=prompts.get(key[1]),
                    candidate=ItemSide(cand[key], c_side.answers, c_side.raw_outputs),
                    baseline=ItemSide(base[key], b_side.answers, b_side.raw_outputs),
                )
            )
    items.sort(key=lambda i: (not i.lost, i.item_id, i.item_sha256))
    return DiscordantItems(task, candidate, baseline, gated, len(keys), tuple(items))


def answers_text(answers: Iterable[str | None]) -> str:
    """The answers of an item's passes as one string: each distinct answer once, in pass order."""
    distinct = list(dict.fromkeys("(none)" if a is None else a for a in answers))
    return " | ".join(distinct) if distinct else "–"


PROMPT_START_CHARS = 60  # the prompt's start shown beside an item
ANSWER_CHARS = 40


def _points(score: float) -> str:
    return f"{score:.0f}" if score == round(score) else f"{score:.1f}"


def columns(gated: bool) -> list[str]:
    """The columns of a discordant-items table (the report's and ``byog items``')."""
    if gated:
        return ["item", "item sha256", "candidate score", "baseline score"]
    return [
        "item",
        "prompt (start)",
        "gold",
        "candidate answered",
        "candidate score",
        "baseline answered",
        "baseline score",
    ]


def cells(item: DiscordantItem, gated: bool) -> list[str]:
    """One row of raw strings (escape them for where they are shown); scores in points 0-100."""
    if gated:
        return [item.item_id, item.item_sha256[:16], _points(item.candidate.score), _points(item.baseline.score)]
    prompt = item.prompt if item.prompt is not None else "(not in byog's data)"
    if len(prompt) > PROMPT_START_CHARS:
        prompt = prompt[: PROMPT_START_CHARS - 1] + "…"
    return [
        item.item_id,
        prompt,
        item.target if item.target is not None else "–",
        answers_text(item.candidate.answers)[:ANSWER_CHARS],
        _points(item.candidate.score),
        answers_text(item.baseline.answers)[:ANSWER_CHARS],
        _points(item.baseline.score),
    ]
