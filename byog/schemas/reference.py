"""The reference pages of the plan, claims and policy formats, generated from the models themselves.

    python -m byog.schemas.reference           # rewrite docs/reference/*.md
    python -m byog.schemas.reference --check   # exit 1 and name the pages that differ (a unit test runs it)

Every field of every model a format reaches gets a row: its type (from the annotation), its
default, what it means (the comment on the field's line and the lines just above it, in the
model's source: the one place it is written) and an example (the value the format's commented
example file gives it, ``docs/reference/examples/<format>.yaml``, which must itself validate).
"""

from __future__ import annotations

import inspect
import io
import json
import re
import sys
import tokenize
import types
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import yaml
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from byog.schemas.claims import ClaimsFile
from byog.schemas.plan import SERVER_CONFIGS, Plan, ServerBase
from byog.schemas.policy import Policy

REPO = Path(__file__).resolve().parents[2]
REFERENCE_DIR = REPO / "docs" / "reference"
EXAMPLES_DIR = REFERENCE_DIR / "examples"
FORMATS: dict[str, tuple[type[BaseModel], str]] = {
    "plan": (Plan, "what `byog plan` and `byog run` read (a file, or a built-in profile)"),
    "claims": (
        ClaimsFile,
        "the numbers a PR states (`byog run --claims`, `byog bundle pack --claims`, `byog verify --claims`)",
    ),
    "policy": (Policy, "what a maintainer requires of every bundle (`byog verify --policy`)"),
}


# What a field means where its model's source carries no comment for it: by field name, or by
# (model, field) where one name means different things. A field in neither is an empty cell,
# which tests/unit/schemas/test_reference.py refuses.
MEANINGS: dict[str, str] = {
    "schema_version": "the format's version; byog migrates older ones when it loads them",
    "kind": "which variant this is (the tag that picks the table)",
    "runtime": "where the server runs: endpoint, local, docker, ssh or slurm",
    "name": "a label; must be unique where it names something others refer to",
    "description": "free text shown by `byog plan` and in the report",
    "model": "what every server serves",
    "servers": "server names (keys of `servers`) this applies to; default: every server",
    "workloads": "the bench workloads, each expanded into points (`byog plan` lists them)",
    "evals": "accuracy tasks run on every (or the named) server with the same seeds",
    "seeds": "seeds of the prompts and of each eval pass (pass k uses seeds[k])",
    "path": "a local Hugging Face directory, a hub id (org/name) or builtin:smollm2-135m-instruct",
    "served_name": "the model name clients send (default: the directory's name or the hub id)",
    "tokenizer": "tokenizer path or hub id (default: the model's own)",
    "max_model_len": "vLLM --max-model-len: prompt + output tokens per request",
    "tensor_parallel_size": "vLLM --tensor-parallel-size",
    "data_parallel_size": "vLLM --data-parallel-size",
    "decode_context_parallel_size": "vLLM --decode-context-parallel-size",
    "url": "base URL of the running OpenAI-compatible server (no /v1)",
    "env": "environment variables of the server's processes (over byog's CPU defaults)",
    "startup_timeout_s": "seconds a start may take before byog gives up on it",
    "launcher": "how a multi-node server's nodes cooperate: native (--nnodes/--node-rank) or ray",
    "hosts": "one entry per node, rank 0 first",
    "platform": "the image's platform; a node of another architecture is refused before anything starts",
    "candidate": "the server (name) held against the baseline",
    "baseline": "the server (name) the candidate is held against",
    "differs_in": "launch facts the pair differs in on purpose (verify fails an undeclared difference)",
    "baseline_is_stock": "false: the baseline is not a stock launch, and the report says so",
    "isl": "input (prompt) lengths in tokens; each one is a point",
    "osl": "output lengths in tokens; each one is a point",
    "prompts": "what the prompts are: random token ids or a dataset's text",
    "api": "the OpenAI API the requests use: completions or chat",
    "reset_prefix_cache": "reset vLLM's prefix cache before each point",
    "request_body": "byog (exact per-chunk token counts) or vllm (the body `vllm bench serve` sends)",
    "batch_sizes": "B: requests that start together; each one is a point",
    "warmup_waves": "waves run first and not measured",
    "waves": "measured waves per point",
    "concurrencies": "requests (sessions, for agentic) in flight; each one is a point",
    "num_prompts": "measured requests per point",
    "warmup_prompts": "requests run first and not measured",
    "rates": "requests per second (Poisson arrivals); each one is a point",
    "seed": "seed of the random stream",
    "source": "synthetic sessions or a replayed trace",
    "slo": "latency limits; each point reports the share of requests inside them",
    "task": "an eval task of byog's registry (a typo is named with the nearest task)",
    "num_concurrent": "requests in flight while the eval runs (null: what the server's KV cache and max_num_seqs hold)",
    "looks": "fractions of the limit at which the paired test looks (group-sequential), ending at 1.0",
    "spending": "alpha spending of the looks: obf (O'Brien-Fleming type) or pocock",
    "random_prompts": "random-id prompts",
    "random_isl": "tokens of each random-id prompt",
    "dataset": "the dataset the prompts come from",
    "dataset_prompts": "real-text prompts",
    "dataset_isl": "tokens of each real-text prompt",
    "tolerance": "relative: |measured - value| <= tolerance x |value|",
    "send": "ids: the token ids themselves; text: re-encoded text the server tokenizes",
    "repeat": "true: one row repeated to ISL tokens; false: consecutive rows",
    "ttft_s": "time to first token limit (s)",
    "tpot_s": "time per output token limit (s)",
    "e2e_s": "end-to-end latency limit (s)",
    "max_probes": "probes at most",
    "first_input_tokens": "tokens of a session's first prompt",
    "think_time_s": "pause between turns (s), as a tool call would take",
    "fanout": "sub-agents (null: none)",
    "speedups": "replay the trace this many times faster; each one is a point",
    "args": "arguments appended to the baseline's vLLM arguments (the last value of a flag wins)",
    "value": "the number claimed",
    "min": "lower end",
    "max": "upper end (a cap, for skewed distributions)",
    "mean": "mean",
    "median_ratio": "median / mean: the skew",
    "probability": "chance of a fork after each main-agent turn but the last",
    "claims": "the claims",
    "server": "the server (name) whose point it is",
    "verdict": "the accuracy verdict claimed",
    "required_points": "points every bundle must have measured",
    "required_tasks": "tasks that must have a verdict for every candidate",
    "min_samples": "minimum samples per point and per eval",
    "require_valid_points": "no point may be flagged invalid",
    "stock": "what a stock baseline must run",
    "require_bound_candidates": "under --for OWNER/REPO#N@SHA every candidate must name its commit",
    "point": "a point id, as in summary.json (or `select`)",
    "select": "fields that pick exactly one point (or `point`)",
    "vllm_versions": "vLLM versions a stock baseline may run",
}


def type_name(annotation: Any) -> str:
    """An annotation as a reader writes it: ``list[int]``, ``"ids" | "text"``, ``RandomPrompts | DatasetPrompts``."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return " | ".join(json.dumps(a) for a in args)
    if origin in (Union, types.UnionType):
        return " | ".join(type_name(a) for a in args)
    if origin is not None and getattr(origin, "__name__", "") == "Annotated":
        return type_name(args[0])
    if args and origin is not None and hasattr(annotation, "__metadata__"):
        return type_name(args[0])
    if origin in (list, tuple, set, frozenset, dict):
        return f"{origin.__name__}[{', '.join(type_name(a) for a in args if a is not Ellipsis)}]"
    if annotation is type(None):
        return "null"
    if annotation is ServerBase:  # a plan's server: one of the registered runtimes' config classes
        return " | ".join(config.__name__ for config in SERVER_CONFIGS.values())
    name = getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")
    return str(name)


def _inner(annotation: Any) -> list[type[BaseModel]]:
    """Every model an annotation reaches (through lists, dicts, unions, Annotated)."""
    if annotation is ServerBase:  # a plan's server: the union of the registered runtimes' config classes
        return list(SERVER_CONFIGS.values())
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in get_args(annotation):
        found += _inner(arg)
    return found


def models_of(root: type[BaseModel], *, not_entered: frozenset[type[BaseModel]] = frozenset()) -> list[type[BaseModel]]:
    """``root`` and every model its fields reach, in the order a reader meets them (the fields of a
    model in ``not_entered`` are not followed)."""
    seen: list[type[BaseModel]] = []
    todo = [root]
    while todo:
        model = todo.pop(0)
        if model in seen:
            continue
        seen.append(model)
        if model in not_entered:
            continue
        for field in model.model_fields.values():
            todo += [m for m in _inner(field.annotation) if m not in seen]
    return seen


def field_comments(model: type[BaseModel]) -> dict[str, str]:
    """Each field's comment in the source of the class that declares it (and its bases): the one on
    its line, after the comment lines just above it."""
    found: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or cls is BaseModel:
            continue
        try:
            source = inspect.getsource(cls)
        except (OSError, TypeError):
            continue
        above: list[str] = []
        lines = source.splitlines()
        comments = {
            tok.start[0]: tok.string.lstrip("#").strip()
            for tok in tokenize.generate_tokens(io.StringIO(source).readline)
            if tok.type == tokenize.COMMENT
        }
        for number, line in enumerate(lines, 1):
            stripped = line.strip()
            if stripped.startswith("#"):
                above.append(comments.get(number, ""))
                continue
            match = re.match(r"^    (\w+)\s*:", line)
            if match and match.group(1) in cls.model_fields:
                said = " ".join([*above, comments.get(number, "")]).strip()
                if said:
                    found[match.group(1)] = said
            above = []
    return found


def _default(field: Any) -> str:
    if field.is_required():
        return "required"
    if field.default_factory is not None:
        value = field.default_factory()
    elif field.default is PydanticUndefined:
        return ""
    else:
        value = field.default
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    return f"`{json.dumps(value, default=str)}`"


def examples_of(instance: Any, found: dict[tuple[str, str], Any] | None = None) -> dict[tuple[str, str], Any]:
    """(model, field) -> the first value the example sets for it."""
    found = {} if found is None else found
    if isinstance(instance, BaseModel):
        for name in instance.model_fields_set:
            value = getattr(instance, name)
            found.setdefault((type(instance).__name__, name), value)
            examples_of(value, found)
    elif isinstance(instance, (list, tuple)):
        for item in instance:
            examples_of(item, found)
    elif isinstance(instance, dict):
        for item in instance.values():
            examples_of(item, found)
    return found


def _example_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, BaseModel):
        return "(see its table)"
    if isinstance(value, dict) and value and all(isinstance(v, BaseModel) for v in value.values()):
        return "`{" + ", ".join(f"{k}: …" for k in value) + "}`"
    if isinstance(value, list) and value and all(isinstance(v, BaseModel) for v in value):
        return f"(a list of {len(value)}; see its table)"
    text = json.dumps(value, default=str)
    return f"`{text if len(text) <= 60 else text[:57] + '…'}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(fmt: str) -> str:
    root, what = FORMATS[fmt]
    example_path = EXAMPLES_DIR / f"{fmt}.yaml"
    example_text = example_path.read_text(encoding="utf-8")
    examples = examples_of(root.model_validate(yaml.safe_load(example_text)))
    out = [
        f"# The {fmt} format",
        "",
        f"Generated by `python -m byog.schemas.reference` from `{root.__module__}`; do not edit "
        "(a unit test fails when this page and the code differ).",
        "",
        f"A {fmt} file is {what}. A key the format does not know is an error that names it.",
        "",
        f"A complete commented example: [examples/{fmt}.yaml](examples/{fmt}.yaml).",
        "",
    ]
    for model in models_of(root):
        doc = inspect.getdoc(model) or ""
        comments = field_comments(model)
        out += [f"## {model.__name__}", ""]
        if doc and model.__doc__ and model.__doc__ is not BaseModel.__doc__:
            out += [doc.split("\n\n")[0].replace("\n", " "), ""]
        out += ["| field | type | default | meaning | example |", "|---|---|---|---|---|"]
        for name, field in model.model_fields.items():
            example = _example_cell(examples.get((model.__name__, name)))
            out.append(
                f"| `{name}` | {_cell(type_name(field.annotation))} | {_cell(_default(field))} "
                f"| {_cell(comments.get(name) or MEANINGS.get(name, ''))} | {_cell(example)} |"
            )
        out.append("")
    out += [f"## Example ({fmt}.yaml)", "", "```yaml", example_text.rstrip("\n"), "```", ""]
    return "\n".join(out)


def expected_pages() -> dict[str, str]:
    return {f"{fmt}.md": render(fmt) for fmt in FORMATS}


def main(argv: list[str]) -> int:
    pages = expected_pages()
    if "--check" in argv:
        stale = [name for name, text in pages.items() if _read(REFERENCE_DIR / name) != text]
        if stale:
            print(f"out of date: {', '.join(stale)} (python -m byog.schemas.reference)", file=sys.stderr)
            return 1
        return 0
    REFERENCE_DIR.mkdir(parents=True, exist_ok=True)
    for name, text in pages.items():
        (REFERENCE_DIR / name).write_text(text, encoding="utf-8")
    return 0


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.is_file() else None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
