"""The KV cache every (server, point) of a plan needs, and the pre-start refusal of a point that cannot fit.

Its own module because both `byog plan` (planview, which shows it) and the run directory's opening
(which refuses on it) need it, and planview sits above the opening.
"""

from __future__ import annotations

import json
from typing import Any, TypedDict

from byog.images.models import model_config_dir
from byog.plans.kv_memory import PointKv, check_kv_fits, kv_shape, plan_kv, server_kv_settings
from byog.runtimes.launch import server_env
from byog.runtimes.local import cpu_vllm_installed
from byog.schemas.plan import Plan


class _KvChecked(TypedDict):
    checked: bool  # False: no config.json readable here (a hub id, a path on the GPU machine)
    note: str
    rows: list[PointKv]


class KvOverview(_KvChecked, total=False):
    caveats: list[str]  # what the KV model leaves out for this config (only when checked)


def kv_overview(plan: Plan) -> KvOverview:
    """The KV cache every (server, point) needs per GPU, from the model's config.json, against each
    server's stated budget (byog.plans.kv_memory); ``checked: false`` with the reason when the
    config cannot be read here (a hub id, a path on the GPU machine)."""
    folder = model_config_dir(plan.model)
    if folder is None:
        return {
            "checked": False,
            "note": f"KV cache not checked: no config.json readable for {plan.model.path} here",
            "rows": [],
        }
    config_json = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    cpu = {name: c.runs_this_hosts_vllm and cpu_vllm_installed() for name, c in plan.servers.items()}
    envs = {name: server_env(c, cpu_build=cpu[name]) for name, c in plan.servers.items()}
    rows = plan_kv(plan, config_json, envs, cpu)
    caveats = sorted({caveat for c in plan.servers.values() for caveat in kv_shape(config_json, **_dtypes(c)).caveats})
    return {"checked": True, "note": f"KV cache from {folder / 'config.json'}", "caveats": caveats, "rows": rows}


def _dtypes(config: Any) -> dict[str, str]:
    kv = server_kv_settings(config)
    return {"kv_cache_dtype": kv["kv_cache_dtype"], "model_dtype": kv["model_dtype"]}


def check_plan_kv(plan: Plan) -> KvOverview:
    """``kv_overview``, refusing (UsageError naming the point) a point whose KV cache cannot fit."""
    overview = kv_overview(plan)
    check_kv_fits(overview["rows"])
    return overview
