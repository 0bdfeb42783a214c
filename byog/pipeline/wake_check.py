"""Wake integrity while an interleaved pair runs: a server's greedy fingerprints before its first
sleep (twice per batch size: the A/A pair, of every prompt) and after every wake (of the first
prompts the check needs: ``wake.required_prompts``), judged as verify judges them
(byog.analysis.wake), with its spec-decode acceptance where it drafts.
"""

from __future__ import annotations

from byog.analysis import counters, wake
from byog.bench.fingerprint import MAX_TOKENS, PROMPTS, fingerprint_prompts, take_fingerprint
from byog.bench.server_api import metrics_text
from byog.core.errors import ByogError
from byog.plans.expand import expand_plan
from byog.schemas.plan import Plan
from byog.schemas.server import FingerprintRecord

MAX_WORDS = 512  # a fingerprint prompt's length cap: the check's cost, not its power, grows past it


class WakeIntegrityFailure(ByogError):
    """A woken server generated other tokens, or accepted fewer drafts, than before its first sleep."""


class WakeCheck:
    """The fingerprints of one server: ``before_first_sleep`` once, ``after_wake`` after each wake."""

    def __init__(self, plan: Plan, names: tuple[str, str], base_url: str, model: str) -> None:
        points = [p for p in expand_plan(plan) if p.kind == "batch" and set(names) <= set(p.servers)]
        words = min((p.isl for p in points), default=0)
        self.prompts = fingerprint_prompts(PROMPTS, min(words, MAX_WORDS))
        top = max((p.batch_size or 1 for p in points), default=1)
        self.batches = sorted({1, min(top, PROMPTS)})
        self.base_url, self.model = base_url, model
        self.records: list[FingerprintRecord] = []
        self.wakes = 0

    def _take(self, batch: int, seq: int | None, point_id: str | None, prompts: int) -> FingerprintRecord:
        before = metrics_text(self.base_url)
        found = take_fingerprint(self.base_url, self.model, self.prompts[:prompts], batch, MAX_TOKENS)
        deltas = counters.counter_deltas(before, metrics_text(self.base_url))
        spec = {k: v for k, v in deltas.items() if k.startswith("vllm:spec_decode")} or None
        record = FingerprintRecord(
            wake=self.wakes,
            seq=seq,
            point_id=point_id,
            batch=batch,
            max_tokens=found["max_tokens"],
            cache_reset=found["cache_reset"],
            seconds=found["seconds"],
            tokens=found["tokens"],
            logprobs=found["logprobs"],
            acceptance_length=wake.acceptance_length(spec) if spec else None,
            spec_decode=spec,
            verdict="reference",
        )
        judged = wake.judge(record, self.records)
        record = record.model_copy(update={"verdict": judged.verdict, "message": judged.message})
        self.records.append(record)
        return record

    def before_first_sleep(self) -> None:
        """The references: two fingerprints per batch size (their difference is the server's own envelope)."""
        for batch in self.batches:
            for _ in range(2):
                self._take(batch, None, None, len(self.prompts))

    def after_wake(self, seq: int, point_id: str | None) -> None:
        """Fingerprint the woken server; WakeIntegrityFailure (after recording it) when it changed."""
        self.wakes += 1
        for batch in self.batches:
            record = self._take(batch, seq, point_id, wake.required_prompts(batch))
            if record.verdict == "changed":
                raise WakeIntegrityFailure(str(record.message))
