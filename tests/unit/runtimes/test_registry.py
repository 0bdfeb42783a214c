"""A runtime added by one module: this test module registers a minimal ``toy`` runtime (its config class and
its behaviour, the local launch reused), and touches no other file; the plan schema, ``byog plan`` and a
plan's server accept it. A runtime nothing registered is an error, not a local launch."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Literal

import pytest
from typer.testing import CliRunner

from byog.cli import build_app
from byog.core.errors import UsageError
from byog.plans.load import parse_plan
from byog.runtimes import registry
from byog.runtimes.local import LocalRuntime
from byog.schemas import runtime_configs as plan_schema
from byog.schemas.plan import LaunchedConfig, Plan, register_server_config, server_config

PLAN = """\
name: toy
model: {path: "builtin:smollm2-135m-instruct", max_model_len: 4096}
servers:
  candidate: {runtime: toy, args: [--enforce-eager]}
  baseline: {args: [--enforce-eager]}
baseline: baseline
workloads: [{kind: batch, batch_sizes: [1], isl: [32], osl: [16]}]
"""


class ToyConfig(LaunchedConfig):
    """vLLM as the local runtime starts it, under another name."""

    runtime: Literal["toy"] = "toy"

    def reproduced_as(self, name: str, allowed_image_digests: Collection[str], digests_hint: str) -> dict[str, str]:
        del name, allowed_image_digests, digests_hint
        return {"runtime": "toy"}  # a reproduction runs it as the bundle did


class ToyRuntime(LocalRuntime):
    """The local launch, reused."""


@pytest.fixture
def toy() -> Iterator[None]:
    register_server_config(ToyConfig)
    registry.register_runtime("toy")(ToyRuntime)
    yield
    plan_schema.SERVER_CONFIGS.pop("toy")
    registry._RUNTIMES.pop("toy")
    plan_schema._server_adapter.cache_clear()
    Plan.model_rebuild(force=True)


def test_a_registered_runtime_is_in_the_plan_schema(toy: None) -> None:
    schema = json.dumps(Plan.model_json_schema())
    assert '"ToyConfig"' in schema and '"toy"' in schema
    assert isinstance(server_config(runtime="toy"), ToyConfig)


def test_byog_plan_prints_its_runtimes_planned_launch(toy: None, tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN, encoding="utf-8")
    result = CliRunner().invoke(build_app("plan"), ["plan", str(path), "--json"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    servers = {s["server"]: s for s in json.loads(result.output)["servers"]}
    assert servers["candidate"]["runtime"] == "toy"
    # the local launch's command line, as the toy runtime reuses it
    assert "-m byog.images.vllm_entry serve" in servers["candidate"]["command"]
    assert "--port PORT" in servers["candidate"]["command"]


def test_reproduce_dry_run_shows_its_runtimes_planned_launch(
    toy: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from byog.bundles.finalize import seal_and_pack
    from tests.support.hostile import HONEST_SERVERS
    from tests.support.keys import allowed_signers, make_key
    from tests.support.synthetic import SyntheticSpec, make_run_dir, plan_yaml

    key, pub = make_key(tmp_path, "contributor")
    signers = allowed_signers(tmp_path / "allowed_signers", [("contributor@example.com", pub)])
    spec = SyntheticSpec(batch_sizes=(1,), eval_items=4)
    plan_text = plan_yaml(spec).replace(HONEST_SERVERS, HONEST_SERVERS.replace("runtime: local", "runtime: toy", 1))
    rd = make_run_dir(tmp_path / "run", spec, plan_text=plan_text)
    rd.plots_dir.mkdir(exist_ok=True)
    bundle = seal_and_pack(rd, tmp_path / "bundle.tar.gz", key=key, plots=None).bundle
    monkeypatch.setenv("BYOG_RUNS_DIR", str(tmp_path / "runs"))
    result = CliRunner().invoke(
        build_app("reproduce"),
        ["reproduce", str(bundle), "--allowed-signers", str(signers), "--dry-run"],
        env={"COLUMNS": "400"},
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    at = lines.index("  candidate: runtime toy")
    assert lines[at + 1].startswith("    argv: ") and "-m byog.images.vllm_entry serve" in lines[at + 1]
    assert not (tmp_path / "runs").exists()  # a dry run starts and writes nothing


def test_an_unregistered_runtime_is_refused(toy: None) -> None:
    plan_schema.SERVER_CONFIGS.pop("toy")
    Plan.model_rebuild(force=True)
    with pytest.raises(UsageError, match="'runtime' is one of endpoint, local, docker, ssh, slurm"):
        parse_plan(PLAN, "plan")
    plan_schema.SERVER_CONFIGS["toy"] = ToyConfig  # for the fixture's teardown
    config = ToyConfig()
    registry._RUNTIMES.pop("toy")
    with pytest.raises(UsageError, match="no runtime 'toy' is registered"):
        registry.runtime_for(config)
    registry._RUNTIMES["toy"] = ToyRuntime
