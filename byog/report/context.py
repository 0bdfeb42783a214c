"""What every section of report.md reads: the typed summary, the run directory's raw files, and
the extra inputs a re-render may add (more claims, reproductions, where the plots live).

``ReportInputs()`` (no extras) is what a bundle's own report.md is rendered from, and what
``byog verify`` re-renders it from; ``byog report`` and the PR workflow may add claims from the
PR's claims file and reproductions attached beside the bundle. Raw files are read once, lazily,
and only through the tolerant readers of ``byog.report.format``: a section never fails on a
missing optional file, it says nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import yaml
from pydantic import ValidationError

from byog.analysis.discordant import DiscordantItems, discordant_items
from byog.core.errors import ByogError
from byog.core.io import read_json
from byog.core.paths import CLAIMS_NAME, PLOTS_BASE, RunDir
from byog.report.format import read_record, server_records
from byog.schemas.bench import PointSummary
from byog.schemas.claims import Claim, ClaimsFile
from byog.schemas.env import EnvRecord
from byog.schemas.manifest import SignerRecord
from byog.schemas.migrate import migrate
from byog.schemas.plan import Plan
from byog.schemas.reproduction import REPRODUCTION_NAME, ReproductionRecord
from byog.schemas.server import ServerRecord
from byog.schemas.summary import Summary


@dataclass(frozen=True)
class ReproductionView:
    """A reproduction as the report shows it: the record, who signed it, what ran."""

    record: ReproductionRecord
    signer_fingerprint: str | None  # from the reproduction bundle's signer.json
    principal: str | None  # who, when the reproduction bundle's signature was verified against allowed signers
    servers: tuple[ServerRecord, ...] = ()  # the reproduction's servers/*/server.json


def reproduction_view(run_dir: RunDir, principal: str | None = None) -> ReproductionView | None:
    """The reproduction a run directory (an unpacked reproduction bundle) holds, or None."""
    path = run_dir.root / REPRODUCTION_NAME
    if not path.is_file():
        return None
    record = ReproductionRecord.model_validate(migrate("reproduction", read_json(path), label=str(path)))
    signer = read_record(run_dir.signer_json, SignerRecord)
    return ReproductionView(
        record=record,
        signer_fingerprint=signer.fingerprint if signer else None,
        principal=principal,
        servers=tuple(server_records(run_dir)),
    )


@dataclass(frozen=True)
class ReportInputs:
    claims: tuple[Claim, ...] = ()  # beside the bundle's own claims.yaml (e.g. the PR's claims file)
    reproductions: tuple[ReproductionView, ...] = ()  # of this bundle, attached beside it
    image_base: str | None = PLOTS_BASE  # prefix of the plot links; None: name the plots, embed none


@dataclass
class ReportContext:
    run_dir: RunDir
    summary: Summary
    inputs: ReportInputs = field(default_factory=ReportInputs)
    report_format: int = 3  # byog.report.markdown.REPORT_VERSION; a section that differs between formats reads it

    @cached_property
    def env(self) -> EnvRecord | None:
        return read_record(self.run_dir.env_json, EnvRecord)

    @cached_property
    def signer(self) -> SignerRecord | None:
        return read_record(self.run_dir.signer_json, SignerRecord)

    @cached_property
    def servers(self) -> list[ServerRecord]:
        return server_records(self.run_dir)

    @cached_property
    def plan(self) -> Plan | None:
        """plan.yaml of the run directory (None when unreadable: verify's schema check says why)."""
        try:
            data = yaml.safe_load(self.run_dir.plan_yaml.read_text(encoding="utf-8"))
            return Plan.model_validate(migrate("plan", data, label="plan.yaml") if isinstance(data, dict) else data)
        except (OSError, UnicodeDecodeError, yaml.YAMLError, ValidationError, ByogError):
            return None

    @cached_property
    def tensor_parallel(self) -> dict[str, int]:
        return {r.name: r.tensor_parallel_size for r in self.servers if r.tensor_parallel_size is not None}

    @cached_property
    def bundle_claims(self) -> list[Claim]:
        """claims.yaml of the run directory (ignored when unreadable: verify's schema check says why)."""
        path = self.run_dir.root / CLAIMS_NAME
        if not path.is_file():
            return []
        try:
            return list(ClaimsFile.model_validate(yaml.safe_load(path.read_text(encoding="utf-8"))).claims)
        except (OSError, UnicodeDecodeError, yaml.YAMLError, ValidationError):
            return []

    @property
    def claims(self) -> list[Claim]:
        return [*self.bundle_claims, *self.inputs.claims]

    @cached_property
    def own_reproduction(self) -> ReproductionView | None:
        """When this run directory is itself a reproduction of another bundle."""
        try:
            return reproduction_view(self.run_dir)
        except (OSError, ValueError, ByogError):
            return None

    @cached_property
    def points(self) -> dict[tuple[str, str], PointSummary]:
        return {(p.server, p.point_id): p for p in self.summary.bench.points}

    @cached_property
    def invalid(self) -> list[PointSummary]:
        return [p for p in self.summary.bench.points if not p.valid]

    def is_invalid(self, server: str, point_id: str) -> bool:
        point = self.points.get((server, point_id))
        return point is None or not point.valid

    @cached_property
    def discordant(self) -> dict[tuple[str, str, str], DiscordantItems]:
        """(task, candidate, baseline) -> the items the pair scored differently, from items.parquet
        (a pair whose files cannot be read is left out: verify's recompute says why)."""
        found: dict[tuple[str, str, str], DiscordantItems] = {}
        for v in self.summary.evals.verdicts:
            key = (v.task, v.candidate, v.baseline)
            if key in found:
                continue
            try:
                found[key] = discordant_items(self.run_dir, *key)
            except (OSError, ValueError, KeyError, ByogError):
                continue
        return found
