"""Plans: the pydantic model, YAML loading, matrix expansion and the built-in profiles."""

from byog.plans.load import load_plan, parse_plan
from byog.schemas.plan import Plan

__all__ = ["Plan", "load_plan", "parse_plan"]
