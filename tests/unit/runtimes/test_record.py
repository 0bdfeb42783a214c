"""The /health wait of every runtime: a server that exits first is reported with vLLM's root cause
(read from the real CPU vLLM log of a missing worker module), not only its last traceback lines."""

from __future__ import annotations

import pytest

from byog.core.errors import ByogError
from byog.runtimes.record import tail_file, wait_for_health
from tests.support.server_logs import real_log_path


@pytest.mark.parametrize(
    ("log", "cause"),
    [
        ("missing-worker-module", "ModuleNotFoundError: No module named 'byog_no_such_module'"),
        ("refused-flag", "vLLM refused its arguments: argument --dtype: invalid choice: 'float7'"),
    ],
)
def test_a_server_that_exits_first_is_reported_with_its_cause(log: str, cause: str) -> None:
    path = real_log_path(log)
    with pytest.raises(ByogError) as raised:
        wait_for_health(
            "http://127.0.0.1:9",
            name="cand",
            alive=lambda: False,
            log_tail=lambda: tail_file(path),
            timeout_s=5,
            log_path=path,
        )
    first = str(raised.value).split("\n", 1)[0]
    assert first.startswith(f"server 'cand' exited before it became healthy: {cause}"), first


def test_secrets_are_removed_by_field_path_never_by_a_name_substring() -> None:
    from byog.runtimes.record import remove_secrets

    info = {
        "vllm_config": {"model_config": {"hf_token": "hf_x", "max_logprobs": 20}, "token_budget": 5},
        "vllm_env": {"VLLM_MAX_BAD_WORDS_TOTAL_TOKENS": 4096},
    }
    kept, removed = remove_secrets(info)
    assert removed == ["vllm_config.model_config.hf_token"]
    assert kept == {
        "vllm_config": {"model_config": {"max_logprobs": 20}, "token_budget": 5},
        "vllm_env": {"VLLM_MAX_BAD_WORDS_TOTAL_TOKENS": 4096},
    }


def test_env_values_are_redacted_by_secret_name_only_and_dev_mode_is_always_on() -> None:
    from byog.runtimes.launch import redact_env, server_env
    from byog.schemas.plan import server_config

    env = {"HF_TOKEN": "hf_x", "VLLM_MAX_BAD_WORDS_TOTAL_TOKENS": "4096", "MY_SECRET_SAUCE": "1"}
    assert redact_env(env) == {**env, "HF_TOKEN": "<redacted>"}
    config = server_config(runtime="local", env={"VLLM_SERVER_DEV_MODE": "0"})
    assert server_env(config)["VLLM_SERVER_DEV_MODE"] == "1"


def test_the_gpus_a_server_saw_are_those_cuda_visible_devices_names() -> None:
    from byog.runtimes.record import gpus_seen

    nvml = {
        "available": True,
        "driver_version": "580.1",
        "gpus": [
            {"index": 0, "uuid": "GPU-aaa", "name": "H100", "memory_total_bytes": 80, "power_limit_w": 700.0},
            {"index": 1, "uuid": "GPU-bbb", "name": "H200", "memory_total_bytes": 141, "power_limit_w": 700.0},
        ],
    }
    assert [g.name for g in gpus_seen(nvml, "1").gpus] == ["H200"]
    assert [g.name for g in gpus_seen(nvml, "GPU-aa").gpus] == ["H100"]
    assert [g.driver_version for g in gpus_seen(nvml, None).gpus] == ["580.1", "580.1"]
    assert gpus_seen({"available": False, "reason": "NVML did not initialise"}, None).unknown == (
        "NVML did not initialise"
    )


def test_an_answer_over_the_bound_or_an_error_is_unknown_with_why() -> None:
    """Failures the real vLLM does not produce on demand: a huge answer, a refusal, no JSON."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from byog.runtimes.record import MAX_SERVER_INFO_BYTES, resolved_config

    bodies = {"/big": (200, b"{" + b" " * MAX_SERVER_INFO_BYTES + b"}"), "/refused": (404, b"{}")}
    bodies["/text"] = (200, b"not json")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, body = bodies[self.path.split("/server_info")[0]]
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        found = {name: resolved_config(base + name) for name in bodies}
    finally:
        server.shutdown()
    assert found["/big"].unknown == f"/server_info answered over {MAX_SERVER_INFO_BYTES} bytes"
    assert found["/refused"].unknown == "/server_info answered HTTP 404 (no dev mode, or a vLLM without it)"
    assert found["/text"].unknown == "/server_info answered something that is not JSON"
    assert all(r.server_info is None and r.attention_backend == "unknown" for r in found.values())
