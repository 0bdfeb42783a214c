"""Run one lm-eval task against an OpenAI-compatible endpoint, offline, one pass per seed.

The task is lm-eval's own YAML (prompt, few-shot, filters, metric), ``include``d from the
installed lm-eval by absolute path; byog writes a small override YAML into a temp folder that
only re-points the data (``dataset_path: json|csv|parquet`` + ``data_files`` for a local copy, or
the hub id + pinned ``revision``) and sets the generation settings, and loads it through
``TaskManager(include_path=..., include_defaults=False)`` (lm-eval's documented route for
external task configs). gsm8k (5-shot) goes through ``local-completions``; chat tasks through
``local-chat-completions`` with the server's chat template.

Sampling: pass k sends seed s_k with every request (lm-eval's ``seed`` model arg); prompts and
few-shot draws use lm-eval's fixed seeds, identical on every pass and every server. lm-eval's
response cache is never used (``use_cache=None``), so a sampled pass is never replayed.

Per-item records are built from lm-eval's ``log_samples`` output, keeping only ids, hashes, the
extracted answer, a short target and the score: prompts are dropped here, and so are responses
except where the task's extraction found no answer (``[invalid]``), whose response is kept
clipped (``byog.schemas.evals.clip``) so a reader can see why; a gated task keeps none, so gated
text (GPQA) never reaches the run directory.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import logging
import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import yaml

from byog.core.errors import ByogError, EnvironmentProblem
from byog.core.safe_text import one_line
from byog.evals.data import DataSource, builder_for, item_sha256, read_split
from byog.plans.tasks import TaskSpec
from byog.schemas.evals import INVALID_ANSWER, RAW_OUTPUT_CHARS, clip
from byog.schemas.server import Endpoint


@dataclass(frozen=True)
class PassItem:
    doc_id: int
    item_id: str
    item_sha256: str
    extracted_answer: str | None
    target: str | None
    score: float
    raw_output: str | None = None  # the response, clipped: only where extracted_answer is [invalid], not gated
    raw_output_chars: int | None = None  # the whole response's length, where raw_output is kept


def lm_eval_version() -> str:

    return version("lm_eval")


def _lm_eval_tasks_dir() -> Path:
    spec = importlib.util.find_spec("lm_eval")
    if spec is None or spec.origin is None:
        raise EnvironmentProblem("lm-eval is not installed: pip install 'byog[evals]'")
    return Path(spec.origin).parent / "tasks"


BYOG_TASKS_DIR = Path(__file__).parent / "tasks"


def task_yaml(task: TaskSpec) -> Path:
    """The task's own YAML: lm-eval's, or byog's for a task lm-eval does not have."""
    assert task.lm_eval_yaml is not None
    return (BYOG_TASKS_DIR if task.yaml_in_byog else _lm_eval_tasks_dir()) / task.lm_eval_yaml


def generation_kwargs(task: TaskSpec, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The task's generation settings with the plan's or CLI's overrides laid over them, sent as they are
    (``run_task`` refused, before any request, a task whose answers the context cannot hold)."""
    return {**task.generation, **(overrides or {})}


def override_yaml(task: TaskSpec, source: DataSource, gen: dict[str, Any]) -> dict[str, Any]:
    """The YAML that includes lm-eval's task and re-points its data."""
    cfg: dict[str, Any] = {
        "include": str(task_yaml(task)),
        "task": f"byog_{task.name}",
        "tag": [],
        "generation_kwargs": gen,
    }
    if source.kind == "hub":
        cfg["dataset_path"] = source.dataset_id
        cfg["dataset_name"] = source.config
        cfg["dataset_kwargs"] = {"revision": source.revision} if source.revision else {}
    else:
        all_files = [p for paths in source.files.values() for p in paths]
        cfg["dataset_path"] = builder_for(all_files)
        cfg["dataset_name"] = None
        cfg["dataset_kwargs"] = {
            "data_files": {split: [str(p) for p in paths] for split, paths in source.files.items()}
        }
    return cfg


@contextlib.contextmanager
def quiet_git_probe() -> Iterator[None]:
    """lm-eval records the git commit of the working directory with ``git describe``, and git writes
    to byog's stderr: outside a checkout, ``fatal: not a git repository``. Within this, lm-eval runs
    the same probe with git's stderr kept from the console (Python's redirect_stderr cannot reach a
    child's file descriptor 2)."""
    from lm_eval import evaluator
    from lm_eval.loggers.utils import get_commit_from_path

    def probe() -> str | None:
        try:
            done = subprocess.run(["git", "describe", "--always"], capture_output=True, text=True, check=False)
        except FileNotFoundError:
            done = None
        if done is not None and done.returncode == 0:
            return done.stdout.strip()
        commit = get_commit_from_path(os.getcwd())
        return commit if isinstance(commit, str) else None

    original = evaluator.get_git_commit_hash
    evaluator.get_git_commit_hash = probe
    try:
        yield
    finally:
        evaluator.get_git_commit_hash = original


def model_spec(
    task: TaskSpec, endpoint: Endpoint, seed: int, num_concurrent: int, max_retries: int
) -> tuple[str, dict[str, Any]]:
    common: dict[str, Any] = {
        "model": endpoint.model,
        "num_concurrent": num_concurrent,
        "max_retries": max_retries,
        "tokenized_requests": False,
        "seed": seed,
        "timeout": 3600,
    }
    if endpoint.max_model_len:
        common["max_length"] = endpoint.max_model_len
    if task.api == "completions":
        args = {**common, "base_url": f"{endpoint.base_url}/v1/completions"}
        if endpoint.tokenizer:
            args.update(tokenizer=endpoint.tokenizer, tokenizer_backend="huggingface")
        else:
            args["tokenizer_backend"] = None
        return "local-completions", args
    return "local-chat-completions", {
        **common,
        "base_url": f"{endpoint.base_url}/v1/chat/completions",
        "tokenizer_backend": None,
    }


# --- per-item records ----------------------------------------------------------------------------


def _aime_extract(response: str) -> str:
    """lm-eval aime process_results' extraction (last \\boxed{}, else between the first and last '$')."""
    path = _lm_eval_tasks_dir() / "aime" / "utils.py"
    spec = importlib.util.spec_from_file_location("byog_lm_eval_aime_utils", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    indices = [i for i, ch in enumerate(response) if ch == "$"]
    answer = response if len(indices) <= 1 else response[indices[0] + 1 : indices[-1]]
    boxed = module.last_boxed_only_string(response)
    if boxed is not None:
        try:
            content = module.remove_boxed(boxed)
            if content is not None:
                answer = content
        except (AssertionError, IndexError):
            pass
    return answer.strip()


_SAFE_CHOICE = re.compile(r"\([A-Z]\)|[A-Z]|\[invalid\]")


def short_target(task: TaskSpec, target: Any) -> str | None:
    text = str(target)
    if task.name.startswith("gsm8k"):
        return text.split("####")[-1].strip()
    if len(text) > 64 or (task.dataset.gated and not _SAFE_CHOICE.fullmatch(text.strip())):
        return None
    return text


def item_identity(
    task: TaskSpec, doc_id: int, file_rows: list[dict[str, Any]] | None, doc: dict[str, Any]
) -> tuple[str, str]:
    """(item_id, item_sha256) of doc ``doc_id``: the row's own id where it has one, else split:index."""
    row = file_rows[doc_id] if file_rows is not None and doc_id < len(file_rows) else doc
    for key in ("Record ID", "id", "ID", "problem_id"):
        if key in row and row[key] not in (None, ""):
            return str(row[key]), item_sha256(row)
    return f"{task.eval_split}:{doc_id}", item_sha256(row)


def items_from_samples(
    task: TaskSpec, samples: list[dict[str, Any]], file_rows: list[dict[str, Any]] | None
) -> list[PassItem]:
    """One PassItem per doc from lm-eval's logged samples, for the task's filter; no text kept."""
    wanted = task.lm_eval_filter or "none"
    chosen = [s for s in samples if s.get("filter") == wanted]
    if not chosen:
        filters = sorted({str(s.get("filter")) for s in samples})
        raise ByogError(f"lm-eval returned no '{wanted}' results for {task.name} (filters: {filters})")
    out: list[PassItem] = []
    for sample in sorted(chosen, key=lambda s: int(s["doc_id"])):
        doc_id = int(sample["doc_id"])
        filtered = sample.get("filtered_resps") or [None]
        response = filtered[0]
        if isinstance(response, list):
            response = response[0] if response else None
        extracted = _aime_extract(str(response)) if task.name == "aime25" and response is not None else response
        if task.dataset.gated and extracted is not None and not _SAFE_CHOICE.fullmatch(str(extracted).strip()):
            extracted = "[unparsed]"  # gated data: keep only a choice letter, never a span of the response
        item_id, sha = item_identity(task, doc_id, file_rows, sample.get("doc") or {})
        raw = _raw_response(sample) if extracted == INVALID_ANSWER and not task.dataset.gated else None
        out.append(
            PassItem(
                doc_id=doc_id,
                item_id=item_id,
                item_sha256=sha,
                extracted_answer=None if extracted is None else str(extracted)[:64],
                target=short_target(task, sample.get("target")),
                score=float(sample[task.metric]),
                raw_output=None if raw is None else clip(raw, RAW_OUTPUT_CHARS),
                raw_output_chars=None if raw is None else len(raw),
            )
        )
    return out


def _raw_response(sample: dict[str, Any]) -> str | None:
    """The server's text as lm-eval logged it before any filter (``resps``: one list per request)."""
    resps = sample.get("resps") or [None]
    first = resps[0]
    if isinstance(first, list):
        first = first[0] if first else None
    return first if isinstance(first, str) else None


def _server_reason(err: BaseException) -> str:
    """What the server said when it refused a request (lm-eval raises requests' HTTPError, whose text
    says only the status): vLLM's ``error.message``, else the body's start; empty without a response."""
    response = getattr(err, "response", None)
    body = getattr(response, "text", None)
    if not isinstance(body, str) or not body.strip():
        return ""
    try:
        said = json.loads(body)
    except ValueError:
        said = body
    if isinstance(said, dict):
        error = said.get("error")
        said = error.get("message", error) if isinstance(error, dict) else said.get("message", said)
    return f"; the server said: {one_line(said, 300)}"


def run_pass(
    task: TaskSpec,
    source: DataSource,
    endpoint: Endpoint,
    *,
    seed: int,
    limit: int | None,
    num_concurrent: int,
    gen: dict[str, Any],
    max_retries: int = 3,
    samples: list[int] | None = None,
) -> tuple[list[PassItem], dict[str, Any]]:
    """Run lm-eval once (one seed) and return per-item records and what lm-eval was asked to do.

    ``samples``: the doc indices to run (instead of the first ``limit``); lm-eval logs each under its
    own index only when the list is ascending, so it is sorted here."""
    if source.kind != "hub":
        os.environ.setdefault("HF_DATASETS_OFFLINE", "1")  # local files: datasets must not phone the hub
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("TQDM_DISABLE", "1")  # lm-eval's bars would fight the rich status line
    try:
        import lm_eval
        from lm_eval.tasks import TaskManager
    except ImportError as err:
        raise EnvironmentProblem("lm-eval is not installed: pip install 'byog[evals]'") from err
    for name in ("lm_eval", "lm-eval", "httpx", "datasets"):
        logging.getLogger(name).setLevel(logging.ERROR)

    model_name, model_args = model_spec(task, endpoint, seed, num_concurrent, max_retries)
    with tempfile.TemporaryDirectory(prefix="byog-lm-eval-") as tmp:
        cfg = override_yaml(task, source, gen)
        (Path(tmp) / f"byog_{task.name}.yaml").write_text(yaml.safe_dump(cfg, sort_keys=True), encoding="utf-8")
        manager = TaskManager(include_path=tmp, include_defaults=False)
        # lm-eval's tqdm bars go to stderr and would tear the rich status line; TQDM_DISABLE only
        # works if set before tqdm is first imported, so the bars are sent to a buffer instead.
        try:
            with contextlib.redirect_stderr(io.StringIO()), quiet_git_probe():
                results = lm_eval.simple_evaluate(
                    model=model_name,
                    model_args=model_args,
                    tasks=[f"byog_{task.name}"],
                    num_fewshot=task.num_fewshot,
                    limit=None if samples is not None else limit,
                    samples=None if samples is None else {f"byog_{task.name}": sorted(samples)},
                    use_cache=None,  # the response cache stays off: sampled passes must be fresh
                    cache_requests=False,
                    log_samples=True,
                    apply_chat_template=task.api == "chat",
                    task_manager=manager,
                    confirm_run_unsafe_code=False,
                )
        except ByogError:
            raise
        except Exception as err:
            raise ByogError(
                f"lm-eval failed on {task.name} against {endpoint.base_url}: {type(err).__name__}: {str(err)[:300]}"
                f"{_server_reason(err)}"
            ) from err
    if results is None:
        raise ByogError(f"lm-eval returned no results for {task.name}")
    logged = results.get("samples", {}).get(f"byog_{task.name}", [])
    file_rows = read_split(source, task.eval_split) if source.files else None
    items = items_from_samples(task, logged, file_rows)
    config = results.get("config", {})
    runner = {
        "name": "lm-eval",
        "lm_eval_version": lm_eval_version(),
        "model": model_name,
        "model_args": {k: v for k, v in model_args.items() if k != "seed"},
        "apply_chat_template": task.api == "chat",
        "num_fewshot": task.num_fewshot,
        "random_seed": config.get("random_seed", 0),
        "numpy_seed": config.get("numpy_seed"),
        "torch_seed": config.get("torch_seed"),
        "fewshot_seed": config.get("fewshot_seed"),
        "use_cache": None,
        "task_override": {k: v for k, v in cfg.items() if k not in ("dataset_kwargs", "include")},
    }
    return items, runner
