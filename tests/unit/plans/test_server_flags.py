"""The allowlist of `vllm serve` flags a bundle may pass to a reproduction: facts from vLLM 0.32's own
parser, and every flag that runs code or reads a path refused in one sentence naming it."""

from __future__ import annotations

import argparse

import pytest

from byog.core.errors import UsageError
from byog.plans.server_flags import LISTS, SWITCHES, VALUES, WHY, vet_args, vet_server
from byog.schemas.plan import server_config


@pytest.fixture(scope="module")
def vllm_options() -> dict[str, argparse.Action]:
    cli_args = pytest.importorskip("vllm.entrypoints.launchers.cli_args")
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = cli_args.make_arg_parser(FlexibleArgumentParser())
    return {option: action for action in parser._actions for option in action.option_strings}


def test_every_listed_flag_is_a_vllm_serve_option_of_the_kind_byog_parses(vllm_options) -> None:
    for flag in SWITCHES:
        assert flag in vllm_options and vllm_options[flag].nargs == 0, flag
    for flag in VALUES:
        assert flag in vllm_options and vllm_options[flag].nargs is None, flag
    for flag in LISTS:
        assert flag in vllm_options and vllm_options[flag].nargs == "+", flag
    for flag in WHY:
        assert flag in vllm_options, flag  # a refusal names a real flag
    # no flag that imports a class, reads a path or names a plugin is on the list
    listed = SWITCHES | set(VALUES) | set(LISTS)
    risky = {f for f in vllm_options if any(w in f for w in ("cls", "plugin", "path", "dir", "file", "trust", "ssl"))}
    assert not listed & risky, listed & risky


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--trust-remote-code"], "--trust-remote-code, which runs Python code"),
        (["--trust_remote_code"], "--trust-remote-code"),  # vLLM reads '_' as '-'
        (["--chat-template", "/home/maintainer/.ssh/id_ed25519"], "--chat-template, which reads a file"),
        (["--tokenizer=/etc"], "--tokenizer, which reads a tokenizer"),
        (["--worker-cls", "evil.Worker"], "--worker-cls, which imports a Python class"),
        (["--worker-extension-cls", "evil.X"], "--worker-extension-cls"),
        (["--distributed-executor-backend", "evil.Executor"], "--distributed-executor-backend"),
        (["--logits-processors", "evil.P"], "--logits-processors"),
        (["--middleware", "evil.app"], "--middleware"),
        (["--tool-parser-plugin", "/tmp/p.py"], "--tool-parser-plugin"),
        (["--model-loader-extra-config", "{}"], "--model-loader-extra-config"),
        (["--hf-overrides", "{}"], "--hf-overrides"),
        (["--download-dir", "/tmp"], "--download-dir"),
        (["--allowed-local-media-path", "/"], "--allowed-local-media-path"),
        (["--ssl-keyfile", "k"], "--ssl-keyfile"),
        (["--compilation-config", '{"level": 3}'], "--compilation-config"),
        (["--additional-config.backend", "x"], "--additional-config.backend, which is not on byog's list"),
        (["--port", "1"], "--port, which is set by byog"),
        (["--attention-backend", "../../x"], "--attention-backend, which is given '../../x'"),
        (["--enforce-eager=yes"], "--enforce-eager, which takes no value"),
        (["--max-num-seqs"], "--max-num-seqs, which is given 'no value'"),
        (["--enforce-eager", "/opt/other-model"], "'/opt/other-model' to vllm serve where a flag belongs"),
    ],
)
def test_a_flag_that_runs_code_or_reads_a_path_is_refused_by_name(args: list[str], named: str) -> None:
    with pytest.raises(UsageError, match="^server 'candidate' of the bundle passes ") as err:
        vet_args("candidate", args)
    message = str(err.value)
    assert named in message and "\n" not in message and message.count(". ") == 0, message


def test_flags_that_only_change_the_computation_pass() -> None:
    vet_args(
        "candidate",
        [
            "--enforce-eager",
            "--no-enable-prefix-caching",
            "--max-num-seqs",
            "16",
            "--max_num_batched_tokens=16384",
            "--kv-cache-memory-bytes",
            "80G",
            "--load-format",
            "dummy",
            "--dtype",
            "float32",
            "--cudagraph-capture-sizes",
            "1",
            "2",
            "4",
            "--attention-backend",
            "FLASH_ATTN",
        ],
    )


def test_the_maintainer_may_allow_a_flag_and_its_value() -> None:
    vet_args(
        "candidate",
        ["--trust-remote-code", "--chat-template", "t.jinja"],
        allowed=["--trust-remote-code", "--chat-template"],
    )
    with pytest.raises(UsageError, match="--chat-template"):
        vet_args("candidate", ["--trust-remote-code", "--chat-template", "t.jinja"], allowed=["--trust-remote-code"])


def test_config_keys_pass_through_their_own_lists() -> None:
    ok = server_config(
        additional_config={"decode_backend": "latency_specialized"},
        speculative_config={"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4},
    )
    vet_server("candidate", ok)
    with pytest.raises(UsageError, match="additional_config.plugin, which is not a key"):
        vet_server("candidate", server_config(additional_config={"plugin": "x"}))
    with pytest.raises(UsageError, match="additional_config.decode_backend, which is given something other"):
        vet_server("candidate", server_config(additional_config={"decode_backend": {"path": "/x"}}))
    drafter = server_config(speculative_config={"method": "eagle", "model": "/data/drafter"})
    with pytest.raises(UsageError, match="speculative_config.model, which is not a key"):
        vet_server("candidate", drafter)
    vet_server("candidate", drafter, allowed=["speculative_config.model"])


@pytest.mark.parametrize("value", ["FLASH_ATTN\n", "FLASH_ATTN\r", "FLASH_ATTN\n--trust-remote-code"])
def test_a_name_value_ending_in_a_line_break_is_refused(value: str) -> None:
    vet_args("candidate", ["--attention-backend", "FLASH_ATTN"])
    with pytest.raises(
        UsageError, match="^server 'candidate' of the bundle passes --attention-backend, which is given"
    ):
        vet_args("candidate", ["--attention-backend", value])
