"""arg_value reads a flag's value from a server's argv the way argparse would."""

from __future__ import annotations

import pytest

from byog.core.argv import arg_value


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--max-model-len", "2048"], "2048"),
        (["--max-model-len=4096"], "4096"),
        (["--max-model-len", "1", "--max-model-len=2"], "2"),  # the last one wins
        (["--max-model-len=a=b"], "a=b"),  # only the first '=' splits
        (["--max-model-len"], None),  # a flag with nothing after it has no value
        (["--max-model-lens", "9"], None),  # another flag that starts with the same letters
        (["serve", "model"], None),
    ],
)
def test_arg_value(args: list[str], expected: str | None) -> None:
    assert arg_value(args, "--max-model-len") == expected
