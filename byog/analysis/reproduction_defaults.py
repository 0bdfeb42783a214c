"""A reproduction's defaults, in a module of constants only: ``byog reproduce --help`` shows them without
loading the comparison it configures (analysis/reproduction.py says why each value)."""

DEFAULT_SAMPLE = 1  # points re-run per (server, workload)
DEFAULT_EVAL_ITEMS = 3  # eval items re-run per task
DEFAULT_RUN_NOISE = 0.05  # the run-to-run noise allowed beside the bundle's CI (analysis/reproduction.py)
