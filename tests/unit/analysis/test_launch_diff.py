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
