"""lm-eval's git probe: outside a git checkout it prints git's ``fatal: not a git repository`` on
byog's stderr; within ``quiet_git_probe`` it records the same commit and prints nothing. And which
docs a pass runs: ``samples=`` picks them by index, each keeping its identity. And an answer the
task's filter could not read (``[invalid]``) keeps the server's raw output, clipped; a gated task's never."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

evaluator = pytest.importorskip("lm_eval.evaluator")

from byog.evals.lm_eval_adapter import quiet_git_probe  # noqa: E402
from byog.plans.tasks import get_task  # noqa: E402


def test_outside_a_checkout_nothing_reaches_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))  # tmp_path is not inside a repository
    evaluator.get_git_commit_hash()
    assert "not a git repository" in capfd.readouterr().err  # lm-eval's own probe (what byog hides)
    with quiet_git_probe():
        assert evaluator.get_git_commit_hash() is None
    assert capfd.readouterr().err == ""


def test_inside_a_checkout_the_same_commit_is_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", str(tmp_path)], check=True)
    subprocess.run([*git, "-C", str(tmp_path), "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    monkeypatch.chdir(tmp_path)
    original, theirs = evaluator.get_git_commit_hash, evaluator.get_git_commit_hash()
    with quiet_git_probe():
        assert evaluator.get_git_commit_hash() == theirs and len(theirs) >= 7
    assert evaluator.get_git_commit_hash is original  # lm-eval's own again on the way out


def test_samples_pick_docs_by_index_and_keep_their_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """lm-eval 0.4.13's own dummy model (no server): ``samples=`` runs exactly those docs, in any order
    given, and each item keeps its doc's index and id (lm-eval logs doc_id as indices[i])."""
    import dataclasses

    from byog.evals import lm_eval_adapter as adapter
    from byog.evals.data import read_split, resolve_source
    from byog.schemas.server import Endpoint

    monkeypatch.setattr(adapter, "model_spec", lambda *args, **kw: ("dummy", {}))
    task = dataclasses.replace(get_task("arithmetic_generated"), api="completions")  # dummy has no chat template
    source = resolve_source(task, None)
    endpoint = Endpoint(base_url="http://127.0.0.1:1", model="m", max_model_len=2048)
    gen = adapter.generation_kwargs(task, {})
    items, _ = adapter.run_pass(
        task, source, endpoint, seed=1, limit=None, num_concurrent=1, gen=gen, samples=[57, 3, 120]
    )
    rows = read_split(source, "test")
    assert [(i.doc_id, (i.item_id, i.item_sha256)) for i in items] == [
        (d, adapter.item_identity(task, d, rows, {})) for d in (3, 57, 120)
    ]
    # the dummy model answers "lol": first-number finds no number, lm-eval's fallback is [invalid]
    assert {(i.extracted_answer, i.raw_output, i.raw_output_chars) for i in items} == {("[invalid]", "lol", 3)}


def _sample(doc_id: int, response: str, filtered: str) -> dict[str, object]:
    """One logged sample as lm-eval 0.4 writes it: ``resps`` before the filters, ``filtered_resps`` after."""
    return {
        "doc_id": doc_id,
        "doc": {"id": f"d{doc_id}"},
        "target": "12",
        "filter": "strict-match",
        "resps": [[response]],
        "filtered_resps": [filtered],
        "exact_match": 0.0,
    }


def test_an_invalid_answer_keeps_its_raw_output_clipped_and_a_read_one_keeps_none() -> None:
    from byog.evals.lm_eval_adapter import items_from_samples
    from byog.schemas.evals import RAW_OUTPUT_CHARS

    long = "step " * 2000 + "so 12 it is"  # 10,011 characters and no '#### '
    samples = [_sample(0, "The answer is 12.", "[invalid]"), _sample(1, "#### 13", "13"), _sample(2, long, "[invalid]")]
    items = items_from_samples(get_task("gsm8k"), samples, None)
    assert (items[0].raw_output, items[0].raw_output_chars) == ("The answer is 12.", 17)
    assert (items[1].raw_output, items[1].raw_output_chars) == (None, None)
    kept = items[2].raw_output
    assert kept is not None and items[2].raw_output_chars == len(long)
    assert kept.startswith("step step") and kept.endswith("so 12 it is")  # the end, where a filter looks, kept
    assert f"[… {len(long) - RAW_OUTPUT_CHARS:,} characters left out …]" in kept


def test_a_gated_tasks_invalid_answer_keeps_no_text() -> None:
    from byog.evals.lm_eval_adapter import items_from_samples

    sample = {**_sample(0, "(A) is wrong because <the question's text>", "[invalid]"), "filter": "flexible-extract"}
    (item,) = items_from_samples(get_task("gpqa_diamond"), [sample], None)
    assert (item.extracted_answer, item.raw_output, item.raw_output_chars) == ("[invalid]", None, None)


def test_a_request_the_server_refuses_says_the_servers_reason(tmp_path: Path) -> None:
    """lm-eval's HTTPError says only "400 Client Error"; the one sentence carries what vLLM answered
    (its ``error.message``), escaped for the terminal."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from byog.core.errors import ByogError
    from byog.evals.data import resolve_source
    from byog.evals.lm_eval_adapter import generation_kwargs, run_pass
    from byog.schemas.server import Endpoint

    reason = "This model's maximum context length is 1024 tokens. However, you requested 1240 tokens.\x1b[2J"

    class Refuse(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = json.dumps({"error": {"message": reason, "type": "BadRequestError", "code": 400}}).encode()
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    task = get_task("arithmetic_generated")
    endpoint = Endpoint(base_url=f"http://127.0.0.1:{server.server_address[1]}", model="m", max_model_len=1024)
    try:
        with pytest.raises(ByogError) as caught:
            run_pass(
                task,
                resolve_source(task, None),
                endpoint,
                seed=1,
                limit=1,
                num_concurrent=1,
                gen=generation_kwargs(task),
                max_retries=1,
            )
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    said = str(caught.value)
    assert "400" in said
    assert "the server said: This model's maximum context length is 1024 tokens" in said
    assert "\x1b" not in said


def test_the_generation_settings_are_sent_as_the_task_and_the_overrides_set_them() -> None:
    """Never cut to the context: an eval that cannot fit is refused before it runs (``run_task``)."""
    from byog.evals.lm_eval_adapter import generation_kwargs

    aime = get_task("aime25")
    assert generation_kwargs(aime) == aime.generation and generation_kwargs(aime)["max_gen_toks"] == 32768
    assert generation_kwargs(aime, {"max_gen_toks": 100}) == {**aime.generation, "max_gen_toks": 100}
    assert aime.generation["max_gen_toks"] == 32768  # the registry's own settings untouched
