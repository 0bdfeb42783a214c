"""vLLM's sleep mode: the dev endpoints' protocol (against byog's loopback vLLM), and what refuses it."""

from __future__ import annotations

from pathlib import Path

import pytest

from byog.core.errors import ByogError
from byog.runtimes import sleep_mode
from byog.schemas.plan import server_config
from tests.support.fake_vllm import FakeVllm


@pytest.mark.parametrize("swap_bodies", [True, False], ids=["vllm-0.32-json", "vllm-0.24-empty-200"])
def test_sleep_wake_and_is_sleeping_as_vllm_serves_them(swap_bodies: bool) -> None:
    """Each swap is confirmed through /is_sleeping, so an empty 200 (vLLM 0.24 on the H200) is a swap too."""
    fake = FakeVllm(sleep_mode=True, swap_bodies=swap_bodies)
    try:
        control = sleep_mode.SleepControl("stock", fake.base_url)
        assert control.is_sleeping() is False
        assert control.sleep() >= 0.0
        assert control.is_sleeping() is True
        assert control.wake_up() >= 0.0
        assert control.is_sleeping() is False
        assert fake.calls == [
            "is_sleeping",
            *("sleep?level=1", "is_sleeping", "is_sleeping"),  # the swap's own confirmation, then the test's
            *("wake_up", "is_sleeping", "is_sleeping"),
        ]
    finally:
        fake.close()


def test_a_server_without_dev_mode_is_named_as_having_no_sleep_mode() -> None:
    fake = FakeVllm(sleep_mode=False)
    try:
        control = sleep_mode.SleepControl("stock", fake.base_url)
        with pytest.raises(sleep_mode.SleepModeAbsent, match="does not serve /is_sleeping"):
            control.is_sleeping()
        with pytest.raises(sleep_mode.SleepModeAbsent):
            control.sleep()
    finally:
        fake.close()


def test_a_sleep_that_vllm_refuses_is_an_error_not_a_swap() -> None:
    fake = FakeVllm(sleep_mode=True)
    fake.httpd.shutdown()
    fake.httpd.server_close()
    with pytest.raises(ByogError, match="POST /sleep"):
        sleep_mode.SleepControl("stock", fake.base_url).sleep()


def test_the_cpu_build_of_vllm_says_it_has_no_sleep_mode() -> None:
    """The real facts of this machine's vLLM (its CPU build): CpuPlatform, is_sleep_mode_available() False."""
    facts = sleep_mode.local_platform_facts()
    assert facts == sleep_mode.PlatformFacts(platform="CpuPlatform", sleep_mode=False)
    refusal = sleep_mode.platform_refusal("stock", facts)
    assert refusal is not None and "CpuPlatform, which has no sleep mode" in refusal
    assert sleep_mode.platform_refusal("stock", sleep_mode.PlatformFacts("CudaPlatform", True)) is None


def test_both_sides_weights_must_fit_host_memory(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 3000)
    weights = sleep_mode.weights_bytes(str(tmp_path))
    assert weights == 3000
    assert sleep_mode.host_memory_refusal(("c", "s"), weights, 6000) is None
    refusal = sleep_mode.host_memory_refusal(("c", "s"), weights, 5999)
    assert refusal is not None and refusal.startswith("pair c vs s cannot be interleaved")
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 100 kB\nMemAvailable:   2048 kB\n")
    assert sleep_mode.available_host_bytes(meminfo) == 2048 * 1024


def test_with_sleep_mode_adds_the_flag_and_dev_mode_once() -> None:
    config = server_config(args=["--enforce-eager", "--enable-sleep-mode"], env={"A": "1"})
    out = sleep_mode.with_sleep_mode(config)
    assert out.args == ["--enforce-eager", "--enable-sleep-mode"]
    assert out.env == {"A": "1", "VLLM_SERVER_DEV_MODE": "1"}


def test_a_level_2_wake_reloads_the_weights_by_vllms_documented_route() -> None:
    from byog.bench.fingerprint import fingerprint_prompts, take_fingerprint

    fake = FakeVllm(sleep_mode=True)
    try:
        control = sleep_mode.SleepControl("stock", fake.base_url)
        prompts = fingerprint_prompts(4)
        before = take_fingerprint(fake.base_url, "fake", prompts, max_tokens=4)
        control.sleep(level=2)
        control.wake_up(level=2)
        assert fake.calls[-4:] == [
            "wake_up?tags=weights",
            "collective_rpc reload_weights",
            "wake_up?tags=kv_cache",
            "is_sleeping",
        ]
        assert take_fingerprint(fake.base_url, "fake", prompts, max_tokens=4)["tokens"] == before["tokens"]
        # a bare wake after level 2 serves token 0 with HTTP 200: only the fingerprint shows it
        control.sleep(level=2)
        control.wake_up(level=1)
        assert take_fingerprint(fake.base_url, "fake", prompts, max_tokens=4)["tokens"] == [[0] * 4] * 4
    finally:
        fake.close()
