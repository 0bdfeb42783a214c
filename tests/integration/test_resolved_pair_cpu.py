"""What a real CPU vLLM resolved, as server.json keeps it and the pair check reads it.

One server beside the session's (tests/conftest.py ``cpu_server``, eager SmolLM2): the same launch
plus the three differences byog's command-line parse once missed, `-O 3` after a switch, a repeated
`--additional-config` (vLLM keeps the last) and a `VLLM_*` env setting. The pair line must name
each, read from /server_info. The session server as an endpoint (byog has no identity of it) is
"unknown: cannot check".
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from byog.analysis.pair_diff import compare_pair
from byog.bundles.checks.identity import pair_line
from byog.schemas.env import EnvRecord
from byog.schemas.plan import ComparisonPair, server_config
from byog.schemas.server import ServerRecord
from tests.support.session_server import SESSION_SERVER_ARGS

pytestmark = pytest.mark.integration

VARIANT_ARGS = [*SESSION_SERVER_ARGS, "-O", "3", "--additional-config", '{"alpha": 1}']
VARIANT_ARGS += ["--additional-config", '{"beta": 2}']
VARIANT_ENV = {"VLLM_MAX_BAD_WORDS_TOTAL_TOKENS": "4096"}


def read(path: Path) -> ServerRecord:
    return ServerRecord.model_validate(json.loads(path.read_text()))


@pytest.fixture(scope="module")
def variant_server(smollm2: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from byog.runtimes.local import LocalRuntime

    config = server_config(runtime="local", args=VARIANT_ARGS, env=VARIANT_ENV)
    server_dir = tmp_path_factory.mktemp("variant") / "servers" / "variant"
    server = LocalRuntime().launch("variant", config, smollm2, server_dir)
    try:
        yield server
    finally:
        server.stop()


def test_server_json_keeps_what_vllm_resolved_where_it_listened_and_no_secret(cpu_server: Any) -> None:
    text = Path(cpu_server.record_path).read_text()
    record = ServerRecord.model_validate(json.loads(text))
    resolved = record.resolved
    assert resolved is not None and resolved.server_info is not None and resolved.unknown is None
    config = resolved.server_info["vllm_config"]
    print(
        f"\n[server.json] {len(text)} bytes; /server_info {resolved.answer_bytes} bytes, "
        f"{len(config)} config sections, {len(resolved.server_info['vllm_env'])} vllm_env settings; "
        f"listen {record.listen}; attention backend {resolved.attention_backend}; hardware {record.hardware}"
    )
    assert config["model_config"]["enforce_eager"] is True
    assert record.listen is not None and record.listen.host == "127.0.0.1" and record.listen.dev_mode
    assert record.env["VLLM_SERVER_DEV_MODE"] == "1"
    assert "hf_token" not in config["model_config"]
    assert record.hardware is not None and record.hardware.unknown  # a CPU host: no NVML facts


def test_the_pair_line_names_each_difference_from_the_resolved_config(cpu_server: Any, variant_server: Any) -> None:
    records = read(Path(variant_server.record_path)), read(Path(cpu_server.record_path))
    diff = compare_pair(("variant", "shared"), records, EnvRecord())
    line = pair_line(ComparisonPair(candidate="variant", baseline="shared"), diff)
    print(f"\n[pair line] {line}")
    assert diff.unknown == []
    keys = [g.key for g in diff.groups]
    assert keys == ["--optimization-level", "additional_config.beta", "env.VLLM_MAX_BAD_WORDS_TOTAL_TOKENS"], line
    assert "optimization_level 2→3" in line and "additional_config.beta (none)→2" in line
    assert "env.VLLM_MAX_BAD_WORDS_TOTAL_TOKENS 1024→4096" in line


def test_an_endpoint_side_is_unknown(cpu_server: Any, tmp_path: Path) -> None:
    from byog.runtimes.endpoint import EndpointRuntime

    config = server_config(runtime="endpoint", url=cpu_server.endpoint.base_url)
    EndpointRuntime().launch("ep", config, cpu_server.model, tmp_path)
    endpoint = read(tmp_path / "server.json")
    diff = compare_pair(("ep", "shared"), (endpoint, read(Path(cpu_server.record_path))), EnvRecord())
    line = pair_line(ComparisonPair(candidate="ep", baseline="shared"), diff)
    print(f"\n[endpoint pair line] {line}")
    assert line.startswith("ep vs shared: unknown: cannot check (server 'ep' has no identity")
