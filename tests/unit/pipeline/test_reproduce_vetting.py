"""`byog reproduce` of signed bundles (trusted signer) whose numerics section, eval settings or eval
tasks ask the maintainer's machine for code, files or hosts: each is refused in one sentence that
names the field and the flag, by the dry run and by the real run, before anything starts; an honest
numerics bundle's dry run shows every flag and env var of every server it would start, derived
control and variant included, what each eval request sends, and what of the bundle it leaves out."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from byog.bundles.finalize import seal_and_pack
from byog.cli import app
from tests.support.keys import allowed_signers, make_key
from tests.support.synthetic import SyntheticSpec, make_run_dir, plan_yaml

runner = CliRunner()
SPEC = SyntheticSpec(batch_sizes=(1,), eval_items=4)
PLAN = plan_yaml(SPEC)
EVAL = "evals:\n  - task: gsm8k\n"
_NUMERICS = "numerics: {random_prompts: 1, random_isl: 16, dataset_prompts: 0, conformance: false, "
HONEST_NUMERICS = _NUMERICS + "envelope_variant: chunked-512}\n"
BUNDLE_ENV = "    env: {VLLM_USE_FLASHINFER_SAMPLER: '0', HF_TOKEN: hf_secret}\n"

# name -> (plan text, the start of the one-sentence refusal)
HOSTILE = {
    "control-trust-remote-code": (
        PLAN
        + _NUMERICS
        + "control: {args: [--trust-remote-code, --dtype, float16], env: {LD_PRELOAD: /tmp/evil.so}}}\n",
        "byog: the bundle's numerics.control passes --trust-remote-code, which runs Python code from the model's "
        "repository; byog reproduce passes it only when you do (--allow-flag --trust-remote-code)",
    ),
    "control-worker-cls": (
        PLAN + _NUMERICS + "control: {args: [--worker-cls, evil.Worker]}}\n",
        "byog: the bundle's numerics.control passes --worker-cls, which imports a Python class",
    ),
    "control-chat-template": (
        PLAN + _NUMERICS + "control: {args: [--chat-template, /etc/shadow]}}\n",
        "byog: the bundle's numerics.control passes --chat-template, which reads a file",
    ),
    "control-ld-preload": (
        PLAN + _NUMERICS + "control: {args: [--dtype, float16], env: {LD_PRELOAD: /tmp/evil.so}}}\n",
        "byog: the bundle's numerics.control sets LD_PRELOAD in the environment, which byog reproduce takes only "
        "from you; it keeps the bundle's value only when you allow it (--allow-flag numerics.control.env.LD_PRELOAD)",
    ),
    "control-pythonpath": (
        PLAN + _NUMERICS + "control: {args: [--dtype, float16], env: {PYTHONPATH: /tmp/evil}}}\n",
        "byog: the bundle's numerics.control sets PYTHONPATH in the environment",
    ),
    "variant-middleware": (
        PLAN + _NUMERICS + "envelope_variant: {args: [--middleware, evil.app]}}\n",
        "byog: the bundle's numerics.envelope_variant passes --middleware, which imports Python code",
    ),
    "variant-kv-transfer": (
        PLAN + _NUMERICS + 'envelope_variant: {args: [--kv-transfer-config, \'{"kv_connector": "x"}\']}}\n',
        "byog: the bundle's numerics.envelope_variant passes --kv-transfer-config, which connects to other hosts",
    ),
    "variant-tokenizer": (
        PLAN + _NUMERICS + "envelope_variant: {args: [--tokenizer, /etc]}}\n",
        "byog: the bundle's numerics.envelope_variant passes --tokenizer, which reads a tokenizer",
    ),
    "variant-hf-endpoint": (
        PLAN + _NUMERICS + "envelope_variant: {args: [--max-num-seqs, '8'], env: {HF_ENDPOINT: 'http://evil'}}}\n",
        "byog: the bundle's numerics.envelope_variant sets HF_ENDPOINT in the environment",
    ),
    "gen-kwargs-logits-processors": (
        PLAN.replace(EVAL, EVAL + "    gen_kwargs: {logits_processors: [evil.Processor]}\n"),
        "byog: the bundle's eval 'gsm8k' sets gen_kwargs.logits_processors, which is not a sampling setting byog sends",
    ),
    "gen-kwargs-extra-body": (
        PLAN.replace(EVAL, EVAL + "    gen_kwargs: {extra_body: {guided_json: {}}}\n"),
        "byog: the bundle's eval 'gsm8k' sets gen_kwargs.extra_body, which is not a sampling setting",
    ),
    "gen-kwargs-top-p-text": (
        PLAN.replace(EVAL, EVAL + "    gen_kwargs: {top_p: '0.9; rm -rf /'}\n"),
        "byog: the bundle's eval 'gsm8k' sets gen_kwargs.top_p to something other than a number",
    ),
}


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("vetting")
    key, pub = make_key(folder, "contributor")
    out = {"signers": allowed_signers(folder / "allowed_signers", [("contributor@example.com", pub)])}
    plans = {name: text for name, (text, _) in HOSTILE.items()}
    plans["honest-numerics"] = PLAN.replace(
        '    args: ["--enforce-eager"]\n', '    args: ["--enforce-eager"]\n' + BUNDLE_ENV
    )
    plans["honest-numerics"] += HONEST_NUMERICS
    plans["allowable"] = PLAN + HONEST_NUMERICS.replace(
        "}\n", ", control: {args: [--trust-remote-code, --dtype, float16], env: {LD_PRELOAD: /tmp/evil.so}}}\n"
    )
    for name, text in plans.items():
        rd = make_run_dir(folder / f"run-{name}", SPEC, plan_text=text)
        rd.plots_dir.mkdir(exist_ok=True)
        out[name] = seal_and_pack(rd, folder / f"{name}.tar.gz", key=key, plots=None).bundle
    return out


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "run"])
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_numerics_or_eval_section_is_refused_in_one_sentence(
    bundles: dict[str, Path], nothing_runs: Path, name: str, dry_run: bool
) -> None:
    args = ["reproduce", str(bundles[name]), "--allowed-signers", str(bundles["signers"]), "--json"]
    result = runner.invoke(app, args + (["--dry-run"] if dry_run else []))
    assert result.exit_code == 2, result.output
    assert result.output.startswith(HOSTILE[name][1]) and result.output.count("\n") == 1, result.output
    assert sorted(p.name for p in nothing_runs.iterdir()) == []  # no run dir


def test_the_maintainer_can_allow_a_stock_changes_flag_and_env(bundles: dict[str, Path], nothing_runs: Path) -> None:
    allow = [
        "--allow-flag=--trust-remote-code",
        "--allow-flag",
        "numerics.control.env.LD_PRELOAD",
        "--allow-flag",
        "numerics.control",
    ]
    result = runner.invoke(
        app,
        ["reproduce", str(bundles["allowable"]), "--allowed-signers", str(bundles["signers"])]
        + ["--dry-run", "--json", *allow],
    )
    assert result.exit_code == 0, result.output
    control = next(s for s in json.loads(result.output)["servers"] if s["server"] == "baseline.control")
    assert control["argv"][-3:] == ["--trust-remote-code", "--dtype", "float16"]
    assert control["env"]["LD_PRELOAD"] == "/tmp/evil.so"  # shown, as it would be set


def test_an_honest_numerics_dry_run_shows_every_flag_env_request_and_what_it_leaves_out(
    bundles: dict[str, Path], nothing_runs: Path
) -> None:
    args = ["reproduce", str(bundles["honest-numerics"]), "--allowed-signers", str(bundles["signers"]), "--dry-run"]
    args += ["--env", "baseline=VLLM_LOGGING_LEVEL=DEBUG"]
    shown = json.loads(runner.invoke(app, [*args, "--json"]).output)
    servers = {s["server"]: s for s in shown["servers"]}
    assert list(servers) == ["baseline", "baseline.control", "baseline.variant", "candidate"]
    for name in ("baseline", "baseline.control", "baseline.variant"):
        assert servers[name]["env"]["VLLM_LOGGING_LEVEL"] == "DEBUG"  # the maintainer's, on the derived ones too
        assert "VLLM_USE_FLASHINFER_SAMPLER" not in servers[name]["env"] and "HF_TOKEN" not in servers[name]["env"]
    assert servers["baseline.control"]["argv"][-3:] == ["--enforce-eager", "--dtype", "float16"]
    assert servers["baseline.variant"]["argv"][-3:] == ["--enforce-eager", "--max-num-batched-tokens", "512"]
    assert shown["numerics"]["control"] == "fp16"  # the original platform's default, by its menu name
    (gsm8k,) = shown["evals"]
    assert gsm8k["gen_kwargs"] == {} and gsm8k["generation"]["temperature"] == 0.0 and gsm8k["api"] == "completions"
    assert shown["points"][0]["request_body"] == "byog" and shown["points"][0]["prompts"]["kind"] == "random"
    assert shown["dropped"] == [
        {
            "server": "baseline",
            "what": "env",
            "value": "VLLM_USE_FLASHINFER_SAMPLER=0",
            "keep": "--env baseline=VLLM_USE_FLASHINFER_SAMPLER=0",
        },
        {
            "server": "baseline",
            "what": "env",
            "value": "HF_TOKEN=<redacted>",
            "keep": "--env 'baseline=HF_TOKEN=<redacted>'",
        },
    ]
    lines = runner.invoke(app, args, env={"COLUMNS": "400"}).output.splitlines()
    at = lines.index("byog reproduce does not use these settings of the bundle (each with the option that keeps it):")
    assert lines[at + 1 : at + 3] == [
        "  server 'baseline': env VLLM_USE_FLASHINFER_SAMPLER=0 "
        "(keep it: --env baseline=VLLM_USE_FLASHINFER_SAMPLER=0)",
        "  server 'baseline': env HF_TOKEN=<redacted> (keep it: --env 'baseline=HF_TOKEN=<redacted>')",
    ]
    kept = runner.invoke(app, [*args, "--json", *shlex.split(shown["dropped"][0]["keep"])]).output
    assert json.loads(kept)["servers"][0]["env"]["VLLM_USE_FLASHINFER_SAMPLER"] == "0"  # the line keeps it
    assert sorted(p.name for p in nothing_runs.iterdir()) == []
