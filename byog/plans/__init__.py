"""Plans: YAML loading (the model is ``byog.schemas.plan``'s ``Plan``), matrix expansion, tiers and
subsets, the eval task registry, server flags and KV-memory estimates, and the built-in profiles and claims."""

from byog.plans.load import load_plan, parse_plan
from byog.schemas.plan import Plan

__all__ = ["Plan", "load_plan", "parse_plan"]
