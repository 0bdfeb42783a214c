"""Two servers evaluate at once only on declared GPU sets that cannot be the same card; anything
byog cannot know is one server at a time, with why."""

from __future__ import annotations

from typing import Any

from byog.analysis.gpu_sets import NOT_KNOWN, at_once, eval_order
from byog.plans.load import parse_plan
from byog.schemas.plan import Plan

TWO_CARDS = {"available": True, "gpus": [{"index": 0}, {"index": 1}]}


def _plan(cand: str, stock: str, more: str = "") -> Plan:
    text = (
        'name: t\nmodel: {path: "builtin:smollm2-135m-instruct"}\nservers:\n'
        f"  cand: {cand}\n  stock: {stock}\n{more}baseline: stock\n"
    )
    return parse_plan(text, "plan.yaml")


def _env(ids: str, extra: str = "") -> str:
    return f'{{env: {{CUDA_VISIBLE_DEVICES: "{ids}"{extra}}}}}'


def _why(plan: Plan, gpu: dict[str, Any] | None = TWO_CARDS) -> tuple[bool, str]:
    choice = at_once(plan, "cand", "stock", gpu)
    return choice.together, choice.why


def test_disjoint_declared_sets_run_at_once() -> None:
    assert _why(_plan(_env("1"), _env("0"))) == (
        True,
        "each on GPUs of its own: 'cand' CUDA_VISIBLE_DEVICES=1, 'stock' CUDA_VISIBLE_DEVICES=0",
    )
    # where NVML saw nothing (no GPU here, or not asked) the declarations are taken as written
    assert _why(_plan(_env("1"), _env("0")), {"available": False, "reason": "no NVML"})[0]


def test_shared_or_undeclared_gpus_keep_one_server_at_a_time() -> None:
    assert _why(_plan(_env("0,1"), _env("1"))) == (
        False,
        "'cand' and 'stock' share GPU 1 (CUDA_VISIBLE_DEVICES=0,1; CUDA_VISIBLE_DEVICES=1)",
    )
    assert _why(_plan("{}", _env("0"))) == (
        False,
        f"{NOT_KNOWN}: 'cand' names no GPUs by index (no CUDA_VISIBLE_DEVICES in its env)",
    )
    assert _why(_plan(_env("GPU-8f2c"), _env("0")))[1] == (
        f"{NOT_KNOWN}: 'cand' names no GPUs by index (CUDA_VISIBLE_DEVICES='GPU-8f2c')"
    )
    endpoint = "{runtime: endpoint, url: 'http://127.0.0.1:9'}"
    assert _why(_plan(endpoint, _env("0")))[1] == f"{NOT_KNOWN}: 'cand' is an endpoint byog does not start"


def test_sets_that_may_name_one_card_twice_or_cannot_hold_the_server_are_not_disjoint() -> None:
    # "0" and "1" in two numberings (PCI bus order and CUDA's fastest-first) may be the same card
    bus = _plan(_env("1", ', CUDA_DEVICE_ORDER: "PCI_BUS_ID"'), _env("0"))
    assert _why(bus) == (
        False,
        f"{NOT_KNOWN}: 'cand' counts GPUs by local runtime, CUDA_DEVICE_ORDER PCI_BUS_ID, "
        "'stock' by local runtime, CUDA_DEVICE_ORDER unset",
    )
    tp2 = _plan("{tensor_parallel_size: 2, env: {CUDA_VISIBLE_DEVICES: '1'}}", _env("0"))
    assert _why(tp2)[1] == f"{NOT_KNOWN}: 'cand' needs 2 GPUs (TP x PP x DP) but CUDA_VISIBLE_DEVICES=1 names 1"
    assert _why(_plan(_env("2"), _env("0")))[1] == (
        f"{NOT_KNOWN}: 'cand' names GPU 2 (CUDA_VISIBLE_DEVICES=2) but NVML sees 2 on this host"
    )


def test_servers_pair_up_in_launch_order() -> None:
    plan = _plan(_env("1"), _env("0"), more=f"  c2: {_env('0')}\n  c3: {_env('1')}\n  c4: {_env('1')}\n")
    choices = eval_order(plan, ["stock", "cand", "c2", "c3", "c4"], TWO_CARDS)
    assert [(c.servers, c.together) for c in choices] == [
        (("stock", "cand"), True),
        (("c2", "c3"), True),
    ]  # c4 is last, alone
    choices = eval_order(plan, ["cand", "c3", "c2"], TWO_CARDS)
    assert [(c.servers, c.together) for c in choices] == [(("cand", "c3"), False), (("c3", "c2"), True)]
