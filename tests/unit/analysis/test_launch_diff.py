"""The pair line's labels (byog/analysis/launch_diff.py): what a maintainer reads must be whole."""

from __future__ import annotations

from byog.analysis.launch_diff import Difference, launch_differences, serve_flags


def test_a_code_difference_keeps_both_commits_and_digests_whole() -> None:
    candidate = "vllm 0.24.0 commit b100feed0123 wheel c019c9010710 files 810825b08e59"
    baseline = "vllm 0.24.0 files c24f59b3c0ba"
    (difference,) = launch_differences({"code": candidate}, {"code": baseline})
    assert difference.label == f"code {candidate} (baseline {baseline})"


def test_a_long_json_value_is_cut_to_one_line() -> None:
    value = '{"decode_backend": "' + "x" * 200 + '"}'
    label = Difference("additional_config", value, "{}").label
    assert len(label) < 120 and label.endswith("(baseline {})") and "..." in label


def test_byog_flags_aside_a_flag_and_its_value_are_read() -> None:
    argv = [
        "vllm",
        "serve",
        "/m",
        "--host",
        "127.0.0.1",
        "--port",
        "8000",
        "--kv-cache-dtype",
        "fp8",
        "--enforce-eager",
    ]
    flags = serve_flags(argv)
    assert flags["--kv-cache-dtype"] == "fp8" and "--enforce-eager" in flags
    assert "--host" not in flags and "--port" not in flags


def test_a_short_flag_after_a_switch_is_read_under_its_long_name() -> None:
    """`--enforce-eager -tp 2` and `-O 3` (vLLM 0.32: the optimization level), and -O3 joined."""
    flags = serve_flags(["vllm", "serve", "/m", "--enforce-eager", "-tp", "2", "-O", "3"])
    assert flags == {"--enforce-eager": "", "--tensor-parallel-size": "2", "--optimization-level": "3"}
    assert serve_flags(["vllm", "serve", "/m", "-O3", "--seed", "-1"]) == {"--optimization-level": "3", "--seed": "-1"}


def test_a_repeated_dict_flag_keeps_the_last_as_vllm_does() -> None:
    argv = ["vllm", "serve", "/m", "--additional-config", '{"alpha": 1}', "--additional-config", '{"beta": 2}']
    assert serve_flags(argv) == {"additional_config.beta": "2"}


def test_the_aggregate_digest_is_the_probes_formula_and_a_contradiction_is_named() -> None:
    from byog.analysis.launch_diff import TOKENIZER_NAMES, digest_contradictions, files_digest
    from byog.runtimes import identity_probe
    from byog.schemas.server import ServerIdentity

    files = {"model.safetensors": "1" * 64, "config.json": "2" * 64, "tokenizer.json": "3" * 64}
    assert files_digest(files) == identity_probe.files_digest(files)
    assert TOKENIZER_NAMES == identity_probe.TOKENIZER_FILES
    weights = identity_probe.files_digest({k: v for k, v in files.items() if k != "tokenizer.json"})
    tokenizer = identity_probe.files_digest({"tokenizer.json": "3" * 64})
    honest = {"weights_sha256": weights, "tokenizer_sha256": tokenizer, "files": files}
    assert digest_contradictions("s", ServerIdentity.model_validate({"weights": honest})) == []
    lying = ServerIdentity.model_validate({"weights": {**honest, "weights_sha256": "f" * 64}})
    assert digest_contradictions("s", lying) == [
        f"server 's' records weights sha256 {'f' * 64}, but its per-file hashes give {weights}"
    ]


def test_vllms_other_spellings_of_a_flag_are_read_as_it_reads_them() -> None:
    argv = ["vllm", "serve", "/m", "--enforce_eager", "-O=3", "-q", "fp8", "--additional-config.decode_backend=x"]
    assert serve_flags(argv) == {
        "--enforce-eager": "",
        "--optimization-level": "3",
        "--quantization": "fp8",
        "additional_config.decode_backend": "x",
    }
