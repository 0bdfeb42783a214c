"""Schema migrations: data written under an older ``schema_version`` is upgraded step by step.

``MIGRATIONS[(name, v)]`` turns a version-v document of schema ``name`` into version v+1;
:func:`migrate` runs for every file verify reads and every raw record analysis reads, so code
past this module sees only current records, never a branch per version. A version newer than this byog knows is refused:
it cannot be read correctly, only guessed at.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from byog.core.errors import UsageError
from byog.schemas.registry import load_all

Migration = Callable[[dict[str, Any]], dict[str, Any]]

MIGRATIONS: dict[tuple[str, int], Migration] = {}


def register_migration(name: str, from_version: int) -> Callable[[Migration], Migration]:
    def decorate(fn: Migration) -> Migration:
        MIGRATIONS[(name, from_version)] = fn
        return fn

    return decorate


def migrate(name: str, data: dict[str, Any], *, label: str | None = None) -> dict[str, Any]:
    """Upgrade ``data`` (a document of schema ``name``) to the current version; refuse the future."""
    current = load_all()[name].version
    version = data.get("schema_version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise UsageError(f"{label or name}: schema_version must be a positive integer, not {version!r}")
    if version > current:
        raise UsageError(
            f"{label or name}: schema_version {version} is newer than this byog reads ({current}); upgrade byog"
        )
    while version < current:
        step = MIGRATIONS.get((name, version))
        if step is None:
            raise UsageError(f"{label or name}: no migration from schema_version {version} of '{name}'")
        data = step(dict(data))
        version += 1
        data["schema_version"] = version
    return data


@register_migration("bench_point", 1)
def _bench_point_fixed_lag_limit(data: dict[str, Any]) -> dict[str, Any]:
    """bench_point 1 -> 2: a fixed event-loop lag limit becomes the share-of-ITL rule with share 0.

    Point records written before the ITL-relative lag rule carry ``client.loop_lag_limit_s``;
    ``max(floor, 0 x ITL)`` with floor = that limit is the same test.
    """
    client = data.get("client")
    if isinstance(client, dict) and "loop_lag_limit_s" in client:
        client = dict(client)
        client["loop_lag_floor_s"] = client.pop("loop_lag_limit_s")
        client["loop_lag_share_of_itl"] = 0.0
        data["client"] = client
    return data


@register_migration("summary", 1)
def _summary_eval_verdict_fields(data: dict[str, Any]) -> dict[str, Any]:
    """summary 1 -> 2: eval verdicts gained discordant, planned_false_fail, screening and the
    degenerate cases; a schema-1 verdict had none of them (the model's defaults say so)."""
    return data


@register_migration("summary", 2)
def _summary_launch_validity(data: dict[str, Any]) -> dict[str, Any]:
    """summary 2 -> 3: a point pooled over launches is invalid when any launch is; a schema-2 point's
    ``valid`` judged its first launch only, which is what it still says (verify compares such
    summaries as of version 2: ``byog.schemas.summary.CHANGED_IN``)."""
    return data


@register_migration("bench_point", 2)
def _bench_point_power(data: dict[str, Any]) -> dict[str, Any]:
    """bench_point 2 -> 3: adds the optional ``power`` samples, ``measured_counter_deltas`` and the
    agentic workload's fields; a v2 record has none, which v3 reads as "not measured" (None)."""
    return data


@register_migration("bench_point", 3)
def _bench_point_stopping(data: dict[str, Any]) -> dict[str, Any]:
    """bench_point 3 -> 4: adds a batch point's sequential stopping and a re-measured point's earlier
    attempts. A v3 record ran its fixed ``waves`` once: v4 reads it with no CI target (whatever its
    point says), no stopping record and no attempts."""
    point = data.get("point")
    if isinstance(point, dict):
        data["point"] = {**point, "ci_target": None, "max_waves": 0}
    return data


@register_migration("summary", 3)
def _summary_power_cap_and_observed_discordance(data: dict[str, Any]) -> dict[str, Any]:
    """summary 3 -> 4: the software power cap alone no longer makes a point invalid, comparisons
    gained ``conditions`` and greedy verdicts their observed discordance; a schema-3 summary's
    ``valid`` and ``screening`` are what it still says (verify compares such summaries as of
    version 3: ``byog.schemas.summary.CHANGED_IN``)."""
    return data


@register_migration("plan", 1)
def _plan_numerics_menu(data: dict[str, Any]) -> dict[str, Any]:
    """plan 1 -> 2: ``numerics.control`` and ``numerics.envelope_variant`` name entries of byog's menu
    (``byog.plans.numerics_menu``). A version-1 change written as ``{args, env}`` stays as it is: a
    custom change, which reads as the menu entry it equals (``[--dtype, float16]`` is ``fp16``). A
    version-1 plan without a control meant ``--dtype float16``; version 2 reads it as the platform's
    default, which is ``fp16`` wherever a version-1 run was recorded (CPU, or a GPU whose env.json
    has no compute capability)."""
    return data


@register_migration("summary", 4)
def _summary_numerics_findings_stand(data: dict[str, Any]) -> dict[str, Any]:
    """summary 4 -> 5: a numerics comparison that drifts or diverges beside an insensitive baseline keeps
    its verdict, and sensitivity names its control's menu entry; a schema-4 summary's ``verdict`` is what
    it still says (verify compares such summaries as of version 4: ``byog.schemas.summary.CHANGED_IN``)."""
    return data


@register_migration("summary", 5)
def _summary_time_to_verdict(data: dict[str, Any]) -> dict[str, Any]:
    """summary 5 -> 6: the time to verdict and an interleaved pair's wake-up effects were added
    (absent from a schema-5 summary; verify compares it as of version 5: ``CHANGED_IN``)."""
    return data


@register_migration("summary", 6)
def _summary_launch_t_interval(data: dict[str, Any]) -> dict[str, Any]:
    """summary 6 -> 7: comparisons over launches take the launch t interval, and one-launch
    comparisons carry ``ci_note`` and the "screening" label; a schema-6 summary's CIs and labels
    are what it still says (verify compares it as of version 6: ``CHANGED_IN``)."""
    return data


@register_migration("summary", 7)
def _summary_wake_integrity(data: dict[str, Any]) -> dict[str, Any]:
    """summary 7 -> 8: an interleaved pair's wake checks and the method its verdict uses were added
    (absent from a schema-7 summary; verify compares it as of version 7: ``CHANGED_IN``)."""
    return data


@register_migration("summary", 8)
def _summary_sequential(data: dict[str, Any]) -> dict[str, Any]:
    """summary 8 -> 9: a verdict of an eval with planned looks carries its group-sequential record
    (no plan before it could plan looks, so none is missing: ``CHANGED_IN``)."""
    return data


@register_migration("summary", 9)
def _summary_phases(data: dict[str, Any]) -> dict[str, Any]:
    """summary 9 -> 10: the run's wall time by phase (phases.json) was added (absent from a schema-9
    summary; verify compares it as of version 9: ``CHANGED_IN``)."""
    return data


@register_migration("summary", 10)
def _summary_paired_method(data: dict[str, Any]) -> dict[str, Any]:
    """summary 10 -> 11: every verdict (and its sequential record) names the method that judged it;
    a schema-10 summary judged every verdict by the paired t (verify compares it as of version 10:
    ``CHANGED_IN``)."""
    evals = data.get("evals")
    for verdict in (evals.get("verdicts") or []) if isinstance(evals, dict) else []:
        if isinstance(verdict, dict):
            verdict.setdefault("method", "paired-t")
            if isinstance(verdict.get("sequential"), dict):
                verdict["sequential"].setdefault("method", "paired-t")
    return data


@register_migration("summary", 11)
def _summary_wake_check_time(data: dict[str, Any]) -> dict[str, Any]:
    """summary 11 -> 12: an interleaved server's wake-integrity fingerprints are their own time
    (``checking_s``, ``check_s``); a schema-11 summary counted them idle (verify compares it as of
    version 11: ``CHANGED_IN``)."""
    return data


@register_migration("phases", 1)
def _phases_eval_order(data: dict[str, Any]) -> dict[str, Any]:
    """phases 1 -> 2: the record gained ``eval_order``; a layout-1 run evaluated one server at a time."""
    data.setdefault("eval_order", [])
    return data


@register_migration("eval_item", 1)
def _eval_item_raw_output(data: dict[str, Any]) -> dict[str, Any]:
    """eval_item 1 -> 2: a row gained ``raw_output`` and ``raw_output_chars`` (what the server returned
    where the answer was ``[invalid]``); a layout-1 row kept no response, which version 2 reads as
    None. Parquet rows are read through ``SchemaEntry.model_for`` (layout 1: ``EvalItemRowV1``); this
    step is the same change for a row given as a document."""
    data.setdefault("raw_output", None)
    data.setdefault("raw_output_chars", None)
    return data


@register_migration("summary", 12)
def _summary_strata(data: dict[str, Any]) -> dict[str, Any]:
    """summary 12 -> 13: a verdict of an eval with operating points carries its per-stratum record
    (no plan before it could set operating points, so none is missing: ``CHANGED_IN``)."""
    return data


@register_migration("summary", 13)
def _summary_strata_batch(data: dict[str, Any]) -> dict[str, Any]:
    """summary 13 -> 14: each stratum gained both servers' output tokens per engine step; a schema-13
    stratum did not carry them, which version 14 reads as None (unknown), and verify compares it as of
    version 13 (``CHANGED_IN``)."""
    return data


@register_migration("eval_item", 2)
def _eval_item_num_concurrent(data: dict[str, Any]) -> dict[str, Any]:
    """eval_item 2 -> 3: a row gained ``num_concurrent`` (the requests in flight it ran under); a
    layout-2 row did not record it, which version 3 reads as None (unknown)."""
    data.setdefault("num_concurrent", None)
    return data


# A version-2 server's fields at their defaults (a version-2 plan.yaml records every field but the null ones).
_PLAN_V2_SERVER_DEFAULTS: dict[str, Any] = {
    **dict.fromkeys(("image", "platform", "gpus", "url", "additional_config", "speculative_config"), None),
    **dict.fromkeys(("gpus_per_node", "node_python"), None),
    **dict.fromkeys(("args", "hosts", "ssh_options", "ray_args"), []),
    **dict.fromkeys(("tensor_parallel_size", "data_parallel_size", "decode_context_parallel_size", "nodes"), 1),
    "env": {},
    "startup_timeout_s": 900.0,
    "launcher": "native",
}
_PLAN_V3_SERVER_KEYS = {"runtime", "args", "tensor_parallel_size", "data_parallel_size"} | {
    "decode_context_parallel_size",
    "additional_config",
    "speculative_config",
}
_PLAN_V3_LAUNCHED_KEYS = _PLAN_V3_SERVER_KEYS | {"env", "startup_timeout_s", "nodes", "launcher", "gpus_per_node"}
_PLAN_V3_LAUNCHED_KEYS |= {"node_python", "ray_args"}
_PLAN_V3_KEYS_OF: dict[str, set[str]] = {
    "endpoint": _PLAN_V3_SERVER_KEYS | {"url"},
    "local": _PLAN_V3_LAUNCHED_KEYS,
    "docker": _PLAN_V3_LAUNCHED_KEYS | {"hosts", "image", "platform", "gpus"},
    "ssh": _PLAN_V3_LAUNCHED_KEYS | {"hosts", "ssh_options"},
    "slurm": _PLAN_V3_LAUNCHED_KEYS | {"hosts", "image", "platform"},
}


# What version 2's ``byog reproduce`` wrote on an endpoint it did not launch (the maintainer's --env, the
# bundle's start-up timeout): never read, dropped whatever it holds.
_PLAN_V2_UNREAD_OF: dict[str, set[str]] = {"endpoint": {"env", "startup_timeout_s"}}


@register_migration("plan", 2)
def _plan_server_per_runtime(data: dict[str, Any]) -> dict[str, Any]:
    """plan 2 -> 3: a server holds only its runtime's fields (``image`` is docker's and slurm's, ``url``
    an endpoint's, ...). A version-2 server recorded every field; one its runtime does not take
    is dropped while it holds the default, which is what version 2 did with it, and so is what a
    version-2 reproduction wrote on an endpoint and nothing read. One set to something else stays,
    so the plan's validation names it."""
    servers = data.get("servers")
    if not isinstance(servers, dict):
        return data
    upgraded: dict[str, Any] = {}
    for name, server in servers.items():
        if isinstance(server, dict):
            runtime = server.get("runtime", "local")
            keys, unread = _PLAN_V3_KEYS_OF.get(runtime, set(server)), _PLAN_V2_UNREAD_OF.get(runtime, set())
            server = {
                k: v
                for k, v in server.items()
                if k not in unread
                and (k in keys or k not in _PLAN_V2_SERVER_DEFAULTS or v != _PLAN_V2_SERVER_DEFAULTS[k])
            }
        upgraded[name] = server
    data["servers"] = upgraded
    return data


@register_migration("plan", 3)
def _plan_server_python(data: dict[str, Any]) -> dict[str, Any]:
    """plan 3 -> 4: a launched server's interpreter, single-node or not, is ``python`` (version 3 named it
    ``node_python`` and only multi-node servers read it); the same value, renamed."""
    servers = data.get("servers")
    if not isinstance(servers, dict):
        return data
    data["servers"] = {
        name: (
            {("python" if k == "node_python" else k): v for k, v in server.items()}
            if isinstance(server, dict)
            else server
        )
        for name, server in servers.items()
    }
    return data


@register_migration("server", 1)
def _server_resolved_config(data: dict[str, Any]) -> dict[str, Any]:
    """server 1 -> 2: records gained where the server listened, what vLLM resolved (/server_info) and
    the GPUs it saw; a schema-1 record has none of them, so its resolved config is unknown (None)."""
    return data
