"""What a test of the real sweep (byog.bench.sweep) hands it besides a plan: a RunningServer over
byog's loopback SSE fake (byog.bench.ceiling); it reports to nobody by default (NullReporter)."""

from __future__ import annotations

from byog.schemas.server import Endpoint


class FakeRunning:
    """A RunningServer over the loopback fake; ``die_on`` makes it report death during that point;
    ``max_model_len``: the context its /v1/models card states, as a runtime read it (None: none)."""

    def __init__(
        self, base_url: str, name: str, die_on: set[str] | None = None, *, max_model_len: int | None = None
    ) -> None:
        self.name = name
        self.endpoint = Endpoint(base_url=base_url, model="fake", max_model_len=max_model_len)
        self.die_on = die_on or set()
        self.dead = False
        self.restarts = 0
        self.current: str | None = None

    def alive(self) -> bool:
        return not self.dead

    def log_tail(self, lines: int = 30) -> str:
        return "fake log: engine core died"

    def restart(self) -> None:
        self.restarts += 1
        self.dead = False

    def stop(self) -> None:
        pass
