"""A server config is one model per runtime, chosen by ``runtime`` (``local`` when a plan names none):
a field its runtime does not take cannot be written, and a recorded version-2 plan still loads."""

from __future__ import annotations

import pytest
import yaml
from pydantic import ValidationError

from byog.core.errors import UsageError
from byog.plans.load import parse_plan
from byog.schemas.migrate import migrate
from byog.schemas.plan import (
    DockerConfig,
    EndpointConfig,
    LocalConfig,
    SlurmConfig,
    SshConfig,
    server_config,
)

# Written for this byog: no migration runs (an unversioned plan reads as version 1 and is upgraded).
PLAN = """\
schema_version: 4
name: t
model: {path: builtin:smollm2-135m-instruct, max_model_len: 4096}
servers:
  baseline: SERVER
baseline: baseline
"""


def _error(server: str) -> str:
    with pytest.raises(UsageError) as caught:
        parse_plan(PLAN.replace("SERVER", server), "plan.yaml")
    return str(caught.value)


def test_the_runtime_picks_the_class_and_local_is_the_default() -> None:
    assert isinstance(server_config(), LocalConfig)
    assert isinstance(server_config(runtime="endpoint", url="http://x"), EndpointConfig)
    assert isinstance(server_config(runtime="docker", image="i"), DockerConfig)
    assert isinstance(server_config(runtime="ssh", nodes=2, hosts=["a", "b"]), SshConfig)
    assert isinstance(server_config(runtime="slurm", nodes=2), SlurmConfig)
    plan = parse_plan(PLAN.replace("SERVER", "{args: [--enforce-eager]}"), "p")
    assert isinstance(plan.servers["baseline"], LocalConfig) and plan.servers["baseline"].runtime == "local"


@pytest.mark.parametrize(
    ("server", "expected"),
    [
        ("{runtime: local, image: vllm:1}", "'servers.baseline': `image` is not a field of a local server"),
        ("{runtime: endpoint, url: 'http://x', nodes: 2}", "`nodes` is not a field of an endpoint server"),
        ("{runtime: endpoint, url: 'http://x', env: {A: '1'}}", "`env` is not a field of an endpoint server"),
        ("{runtime: local, hosts: [a]}", "`hosts` is not a field of a local server"),
        ("{runtime: docker, image: i, ssh_options: [-v]}", "`ssh_options` is not a field of a docker server"),
        ("{runtime: ssh, nodes: 2, hosts: [a, b], gpus: all}", "`gpus` is not a field of an ssh server"),
        ("{runtime: docker}", "'servers.baseline': a docker server needs `image`"),
        ("{runtime: ssh, nodes: 2, hosts: [a]}", "'ssh' needs one 'hosts' entry per node: 2 nodes, 1 hosts"),
        ("{runtime: slurm}", "the 'slurm' runtime runs multi-node servers"),
        ("{runtime: docker, image: i, nodes: 2, hosts: [a]}", "2 nodes but 1 'hosts': one per node"),
        ("{launcher: ray}", "'launcher' and 'gpus_per_node' are for multi-node servers"),
        ("{runtime: k8s}", "'servers.baseline': 'runtime' is one of endpoint, local, docker, ssh, slurm"),
    ],
)
def test_a_field_the_runtime_does_not_take_is_one_sentence_naming_both(server: str, expected: str) -> None:
    message = _error(server)
    assert expected in message and message.startswith("plan.yaml: ")
    assert "\n" not in message and "Value error" not in message


def test_a_server_named_like_a_runtime_keeps_its_name_in_the_error() -> None:
    message = _error("{runtime: docker}").replace("baseline", "x")
    assert "a docker server needs `image`" in message
    text = PLAN.replace("baseline: SERVER", "local: {runtime: local, url: 'http://x'}").replace(
        "baseline: baseline", "baseline: local"
    )
    with pytest.raises(UsageError, match=r"'servers\.local': `url` is not a field of a local server"):
        parse_plan(text, "plan.yaml")


def test_server_config_raises_the_validation_error_for_code() -> None:
    with pytest.raises(ValidationError):
        server_config(runtime="endpoint")


# What byog recorded as plan.yaml at schema version 2: every field of the flat server but the null ones.
V2_RECORD = """\
schema_version: 2
name: recorded
description: ''
model: {path: builtin:smollm2-135m-instruct, max_model_len: 4096}
servers:
  candidate:
    runtime: endpoint
    url: http://127.0.0.1:8000
    args: [--max-num-seqs, '4']
    env: {HF_TOKEN: x}  # a version-2 reproduction wrote the maintainer's --env and the bundle's timeout
    tensor_parallel_size: 1
    data_parallel_size: 1
    decode_context_parallel_size: 1
    startup_timeout_s: 1800.0
    nodes: 1
    launcher: native
    hosts: []
    ssh_options: []
    ray_args: []
  baseline:
    runtime: local
    args: [--enforce-eager]
    env: {A: '1'}
    tensor_parallel_size: 1
    data_parallel_size: 1
    decode_context_parallel_size: 1
    startup_timeout_s: 600.0
    nodes: 1
    launcher: native
    hosts: []
    ssh_options: []
    ray_args: []
baseline: baseline
workloads: []
evals: []
seeds: [1234]
"""


def test_a_recorded_version_2_plan_loads_with_what_it_ran() -> None:
    plan = parse_plan(V2_RECORD, "runs/x/plan.yaml")
    assert plan.schema_version == 4
    candidate, baseline = plan.servers["candidate"], plan.servers["baseline"]
    assert isinstance(candidate, EndpointConfig) and candidate.args == ["--max-num-seqs", "4"]
    assert not hasattr(candidate, "env") and not hasattr(candidate, "startup_timeout_s")  # nothing read them
    assert isinstance(baseline, LocalConfig)
    assert (baseline.env, baseline.startup_timeout_s, baseline.args) == ({"A": "1"}, 600.0, ["--enforce-eager"])


def test_the_migration_drops_only_defaults_so_a_set_field_is_still_named() -> None:
    data = yaml.safe_load(V2_RECORD)
    data["servers"]["baseline"]["image"] = "vllm:1"  # version 2 ignored it on a local server; version 3 refuses it
    migrated = migrate("plan", data)
    assert "hosts" not in migrated["servers"]["baseline"] and "nodes" not in migrated["servers"]["candidate"]
    assert migrated["servers"]["baseline"]["image"] == "vllm:1"
    with pytest.raises(UsageError, match="`image` is not a field of a local server"):
        parse_plan(yaml.safe_dump(data), "runs/x/plan.yaml")


def test_a_version_3_plans_node_python_is_the_servers_python() -> None:
    v3 = PLAN.replace("schema_version: 4", "schema_version: 3").replace(
        "SERVER", "{runtime: ssh, nodes: 2, hosts: [a, b], node_python: /opt/venv/bin/python}"
    )
    plan = parse_plan(v3, "runs/x/plan.yaml")
    server = plan.servers["baseline"]
    assert isinstance(server, SshConfig) and server.python == "/opt/venv/bin/python"
    assert plan.schema_version == 4


def test_a_local_server_names_its_python() -> None:
    server = server_config(python="/src/venv")
    assert isinstance(server, LocalConfig) and server.python == "/src/venv"
    assert "'python'" in _error("{runtime: local, python: ''}") or "python" in _error("{runtime: local, python: ''}")


def test_an_endpoint_names_no_python() -> None:
    assert "python" in _error("{runtime: endpoint, url: 'http://127.0.0.1:8000', python: /usr/bin/python3}")
