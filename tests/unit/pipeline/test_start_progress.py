"""A starting server's phase, followed in its growing log (the real CPU vLLM start, fed in pieces),
and how it is shown: a live line on a terminal, plain lines in a log."""

from __future__ import annotations

from pathlib import Path

from byog.core.reporter import NullStatus
from byog.pipeline.run import show_start
from byog.pipeline.start_progress import FIRST_PHASE, LogPhases, StartProgress, elapsed
from tests.support.reporter import RecordingReporter
from tests.support.server_logs import real_log_lines


def test_the_phase_follows_the_log_as_it_grows_even_mid_line(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"an older start's lines: Application startup complete\n")
    phases = LogPhases(log)  # from where the log ended: the older start is not read
    seen = [phases.phase]
    for line in real_log_lines("compiled-start"):
        for piece in (line[: len(line) // 2], line[len(line) // 2 :]):  # each line arrives cut in two
            with log.open("ab") as handle:
                handle.write(piece)
            if phases.read():
                seen.append(phases.phase)
    assert seen == [
        FIRST_PHASE,
        "starting the engine",
        "loading weights",
        "compiling",
        "sizing the KV cache",
        "starting the API server",
        "ready",
    ]


def test_off_a_terminal_a_line_per_phase_and_per_minute() -> None:
    reporter = RecordingReporter()
    for progress in (
        StartProgress("loading weights", 12.0, 0.0, True, False),
        StartProgress("loading weights", 13.0, 1.0, False, False),  # nothing new: no line
        StartProgress("compiling", 20.0, 0.0, True, False),
        StartProgress("compiling", 81.0, 61.0, False, True),
    ):
        show_start(reporter, NullStatus(), "candidate", ": starting vLLM (local runtime)", progress)
    assert reporter.lines == [
        "candidate: starting vLLM (local runtime): loading weights (12 s)",
        "candidate: starting vLLM (local runtime): compiling (20 s)",
        "candidate: starting vLLM (local runtime): compiling (1 min 21 s)",
    ]


def test_on_a_terminal_the_live_line_is_updated() -> None:
    class Status:
        shown: list[str] = []

        def update(self, text: str, *, lead: str = "") -> None:
            self.shown.append(lead + text)

    status = Status()
    reporter = RecordingReporter(is_live=True)
    show_start(
        reporter, status, "base", ": starting vLLM (local runtime)", StartProgress("compiling", 125, 5, False, False)
    )
    assert status.shown == ["base: starting vLLM (local runtime): compiling (2 min 05 s)"]
    assert reporter.lines == []


def test_elapsed_reads_like_a_clock() -> None:
    assert [elapsed(s) for s in (0.4, 59.9, 60, 3599, 3725)] == [
        "0 s",
        "59 s",
        "1 min 00 s",
        "59 min 59 s",
        "1 h 02 min",
    ]
