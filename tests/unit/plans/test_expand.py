"""Plan expansion into bench points, and refusing workloads a server cannot hold before launch."""

from __future__ import annotations

import pytest

from byog.core.errors import UsageError
from byog.plans.expand import AgenticContextUnknown, agentic_context, check_plan_fits, expand_plan, points_for_server
from byog.plans.load import load_plan, parse_plan

PLAN = """
name: t
model: {path: /m, max_model_len: 128}
servers:
  cand: {runtime: endpoint, url: "http://x", args: ["--max-num-seqs", "4"]}
  base: {runtime: endpoint, url: "http://y"}
baseline: base
workloads:
  - {kind: batch, name: decode, batch_sizes: [1, 4], isl: [32], osl: [64, 16], waves: 2}
  - {kind: concurrency, concurrencies: [2], isl: [8], osl: [8], num_prompts: 10, servers: [base]}
  - {kind: rate, rates: [0.5], isl: [1], osl: [4], num_prompts: 5}
"""


def test_expand_ids_are_the_same_on_every_server_and_ordered() -> None:
    plan = parse_plan(PLAN, "t.yaml")
    ids = [p.point_id for p in expand_plan(plan)]
    assert ids == [
        "decode-b1-isl32-osl64",
        "decode-b4-isl32-osl64",
        "decode-b1-isl32-osl16",
        "decode-b4-isl32-osl16",
        "concurrency-c2-isl8-osl8",
        "rate-r0.5-isl1-osl4",
    ]
    assert [p.point_id for p in points_for_server(plan, "cand")] == [i for i in ids if not i.startswith("concurrency")]
    b4 = expand_plan(plan)[1]
    # the plan's 2 waves are the budget; the default minimum (3) is cut to it: 2 waves, prompts for 2 + 1 warm-up
    assert (b4.batch_size, b4.warmup_waves, b4.waves, b4.total_requests, b4.measured_requests) == (4, 1, 2, 12, 8)
    assert (b4.ci_target, b4.max_waves, b4.wave_cap) == (0.01, 2, 2)


def test_a_point_stopping_on_its_ci_runs_between_min_waves_and_the_plans_waves() -> None:
    import pytest

    from byog.core.errors import ByogError

    eight = parse_plan(PLAN.replace("waves: 2}", "waves: 8}"), "t.yaml")
    point = expand_plan(eight)[0]
    assert (point.waves, point.wave_cap, point.total_requests) == (3, 8, 1 * (1 + 8))  # default minimum 3
    fixed = parse_plan(PLAN.replace("waves: 2}", "waves: 8, ci_target: null}"), "t.yaml")
    assert (expand_plan(fixed)[0].waves, expand_plan(fixed)[0].wave_cap) == (8, 8)
    with pytest.raises(ByogError, match="min_waves"):
        parse_plan(PLAN.replace("waves: 2}", "waves: 2, min_waves: 5}"), "t.yaml")


def test_smoke_profile_expands_to_the_published_decode_sweep() -> None:
    plan, _ = load_plan("smoke")
    assert [p.point_id for p in expand_plan(plan)] == [
        "decode-b1-isl32-osl64",
        "decode-b2-isl32-osl64",
        "decode-b4-isl32-osl64",
    ]
    check_plan_fits(plan)


def test_isl_plus_osl_over_context_is_refused_naming_the_workload() -> None:
    plan = parse_plan(PLAN.replace("osl: [64, 16]", "osl: [100]"), "t.yaml")
    with pytest.raises(
        UsageError, match=r"workload 'decode' asks for ISL 32 \+ OSL 100 = 132 tokens .*max_model_len = 128"
    ):
        check_plan_fits(plan)


def test_batch_over_max_num_seqs_is_refused() -> None:
    plan = parse_plan(PLAN.replace("batch_sizes: [1, 4]", "batch_sizes: [1, 8]"), "t.yaml")
    with pytest.raises(
        UsageError, match=r"workload 'decode' asks for batch size 8 but server 'cand' runs at most --max-num-seqs 4"
    ):
        check_plan_fits(plan)
    # a known server limit passed in (e.g. read from a running endpoint) counts as well
    with pytest.raises(UsageError, match="server 'base'"):
        check_plan_fits(parse_plan(PLAN, "t.yaml"), max_num_seqs={"base": 2})


def test_max_model_len_in_server_args_wins_over_the_model_default() -> None:
    plan = parse_plan(PLAN.replace('"--max-num-seqs", "4"', '"--max-model-len=64"'), "t.yaml")
    with pytest.raises(UsageError, match="server 'cand' holds at most max_model_len = 64"):
        check_plan_fits(plan)


def test_an_eval_whose_prompts_leave_its_answers_no_room_is_refused_before_launch() -> None:
    """GSM8K reserves 1,024 tokens for its 5-shot prompts: at max_model_len 1,024 the server refuses
    its requests (HTTP 400), so the run would fail after the bench; byog's arithmetic (64 reserved) fits."""
    base = PLAN.replace("max_model_len: 128", "max_model_len: 1024") + "seeds: [1]\nevals:\n"
    fits = parse_plan(base + "  - {task: arithmetic_generated}\n", "t.yaml")
    check_plan_fits(fits)
    tight = parse_plan(base + "  - {task: gsm8k, limit: 8, servers: [base]}\n", "t.yaml")
    with pytest.raises(
        UsageError,
        match=r"eval 'gsm8k' reserves 1024 tokens for its prompts and answers in up to 256, but server 'base' "
        r"holds at most max_model_len = 1024: raise it to at least 1280",
    ):
        check_plan_fits(tight)
    check_plan_fits(parse_plan(base.replace("max_model_len: 1024", "max_model_len: 1280") + "  - {task: gsm8k}\n", "t"))


def test_an_eval_whose_answers_would_be_cut_to_fit_is_refused_before_launch() -> None:
    """AIME25 answers in up to 32,768 tokens: at max_model_len 4,096 the run would have cut them to 3,072
    and scored another task; the plan's own max_gen_toks is what must fit."""
    base = PLAN.replace("max_model_len: 128", "max_model_len: 4096") + "seeds: [1]\nevals:\n"
    with pytest.raises(
        UsageError,
        match=r"eval 'aime25' reserves 1024 tokens for its prompts and answers in up to 32768, but server 'cand' "
        r"holds at most max_model_len = 4096: raise it to at least 33792, or lower its max_gen_toks to 3072$",
    ):
        check_plan_fits(parse_plan(base + "  - {task: aime25}\n", "t.yaml"))
    check_plan_fits(parse_plan(base + "  - {task: aime25, gen_kwargs: {max_gen_toks: 3072}}\n", "t.yaml"))
    with pytest.raises(UsageError, match="eval 'gsm8k' reserves 1024 tokens .* in up to 3100, but server 'base'"):
        check_plan_fits(
            parse_plan(base + "  - {task: gsm8k, servers: [base], gen_kwargs: {max_gen_toks: 3100}}\n", "t")
        )
    check_plan_fits(parse_plan(base + "  - {task: mrcr_generated}\n", "t.yaml"))  # sizes its items to the context


AGENTIC = """
name: t
model: {path: /m}
servers: {base: {runtime: endpoint, url: "http://y"}}
baseline: base
workloads: [{kind: agentic, name: agent}]
"""


def test_an_agentic_point_takes_the_plans_context_else_the_servers_and_refuses_when_neither_says() -> None:
    open_point = expand_plan(parse_plan(AGENTIC, "t.yaml"))[0]
    stated = expand_plan(parse_plan(AGENTIC.replace("name: agent}", "name: agent, max_context: 512}"), "t.yaml"))[0]
    assert open_point.max_context is None and stated.max_context == 512
    assert agentic_context(stated, "base", None) == 512  # the plan's, on a server that says none
    assert agentic_context(stated, "base", 4096) == 512  # the plan's, where the server holds it
    assert agentic_context(open_point, "base", 2048) == 2048  # the server's, where the plan says none
    with pytest.raises(UsageError, match="^workload 'agent' cuts sessions at max_context 512 tokens but server 'base'"):
        agentic_context(stated, "base", 256)
    with pytest.raises(AgenticContextUnknown) as refused:
        agentic_context(open_point, "base", None)
    assert str(refused.value) == (
        "agentic point 'agent-c1' has no context to cut its sessions at on server 'base': neither the plan "
        "(workload 'agent' has no max_context) nor the server (its /v1/models card has no max_model_len) states "
        "one; set max_context in workload 'agent' of the plan"
    )
    check_plan_fits(parse_plan(AGENTIC, "t.yaml"))  # before launch: only the server can say, at run time
