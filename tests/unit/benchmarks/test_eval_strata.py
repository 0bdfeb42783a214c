"""benchmarks/eval_strata.py runs small, and its draws have the discordance and the shift asked for."""

from __future__ import annotations

import random
import sys

import pytest

from tests.support.benchmark_scripts import load_script


def test_the_draws_have_the_asked_discordance_and_shift_at_64_only() -> None:
    script = load_script("eval_strata")
    at = [1] * 20000 + [64] * 20000
    cand, base = script.trial(random.Random(1), at, 0.2, -10.0)
    d = [c - b for c, b in zip(cand, base, strict=True)]
    low, high = d[:20000], d[20000:]
    assert sum(x != 0 for x in low) / 20000 == pytest.approx(0.2, abs=0.01)
    assert sum(low) / 20000 == pytest.approx(0.0, abs=0.6)
    assert sum(high) / 20000 == pytest.approx(-10.0, abs=0.6)  # the true dependence, at 64 only


def test_it_prints_the_table_and_skips_a_shift_the_discordance_cannot_hold(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["eval_strata.py", "--trials", "3", "--items", "60"])
    assert load_script("eval_strata").main() == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == "| discordance | true dependence (points) | yes | no | undetermined |"
    assert len(out) == 3 + 9
    assert out[5].startswith("| 0.05 | -10 | n/a: a mean of -10 points needs discordance >= 0.1")
