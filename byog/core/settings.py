"""Where byog keeps and finds things: one home for every environment variable and default folder.

| variable                    | meaning                                                                   |
|-----------------------------|---------------------------------------------------------------------------|
| BYOG_DATA_DIR               | offline datasets (default: the copy shipped inside the package)           |
| BYOG_RUNS_DIR               | where new run directories go (run, serve, --endpoint, reproduce; ./runs)  |
| BYOG_CACHE_DIR              | converted models, hub datasets, bundles `byog.open` verified and unpacked |
| BYOG_SIGNING_KEY            | the SSH key bundles are signed with                                       |
| BYOG_SIGNING_KEY_PASSPHRASE | the passphrase of an encrypted signing key (signed in Python)             |
| BYOG_SSH_BACKEND            | auto, ssh-keygen or python: who signs and verifies                        |
| BYOG_VERIFY_MEMORY_MB       | memory limit of verify's checking child (default 640)                     |
| BYOG_VERIFY_CPU_S           | CPU-seconds limit of verify's checking child (default 60)                 |
| BYOG_VERIFY_TIMEOUT_S       | wall-clock limit of verify's checking child (default 120)                 |
| BYOG_GITHUB_API             | the GitHub API base URL `byog keys add` asks (default api.github.com)     |
| BYOG_TORCH_WHEEL            | a local CPU torch wheel for `byog image build`                            |
| BYOG_NODE                   | set by byog on every process a node starts, to find and stop them again   |
| BYOG_DEBUG                  | 1/true/yes/on: show tracebacks instead of one-sentence errors             |
| XDG_CONFIG_HOME             | where byog's config file is: $XDG_CONFIG_HOME/byog/config                 |

byog's config file (``~/.config/byog/config``, INI) holds the user's own settings: ``[signing]``
(``byog.bundles.sign``) and ``[reproduce]`` (``byog.plans.subset``: what a reproduction runs on
this machine).
"""

from __future__ import annotations

import configparser
import os
from pathlib import Path

from byog.core.errors import UsageError

DATA_DIR_ENV = "BYOG_DATA_DIR"
RUNS_DIR_ENV = "BYOG_RUNS_DIR"
CACHE_DIR_ENV = "BYOG_CACHE_DIR"
SIGNING_KEY_ENV = "BYOG_SIGNING_KEY"
SIGNING_KEY_PASSPHRASE_ENV = "BYOG_SIGNING_KEY_PASSPHRASE"
SSH_BACKEND_ENV = "BYOG_SSH_BACKEND"
VERIFY_MEMORY_MB_ENV = "BYOG_VERIFY_MEMORY_MB"
VERIFY_CPU_S_ENV = "BYOG_VERIFY_CPU_S"
VERIFY_TIMEOUT_S_ENV = "BYOG_VERIFY_TIMEOUT_S"
GITHUB_API_ENV = "BYOG_GITHUB_API"
TORCH_WHEEL_ENV = "BYOG_TORCH_WHEEL"
NODE_MARKER_ENV = "BYOG_NODE"
DEBUG_ENV = "BYOG_DEBUG"

PACKAGED_DATASETS = Path(__file__).resolve().parents[1] / "datasets"


TRUE_VALUES = frozenset({"1", "true", "yes", "on"})


def debug() -> bool:
    """``BYOG_DEBUG`` set to a true value (1, true, yes, on): ``BYOG_DEBUG=0`` keeps errors one sentence."""
    return os.environ.get(DEBUG_ENV, "").strip().lower() in TRUE_VALUES


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "byog"


def config_file() -> Path:
    return config_dir() / "config"


def config_setting(section: str, name: str) -> str:
    """``name`` under ``[section]`` in byog's config file; '' when the file or the setting is absent."""
    path = config_file()
    if not path.is_file():
        return ""
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except configparser.Error as err:
        raise UsageError(f"{path} is not a valid INI file: {err}") from None
    return parser.get(section, name, fallback="").strip()


def cache_dir() -> Path:
    """``$BYOG_CACHE_DIR``, else ``~/.cache/byog``."""
    return Path(os.environ.get(CACHE_DIR_ENV) or Path.home() / ".cache" / "byog").expanduser()


def bundle_cache_dir() -> Path:
    """Where ``byog.open`` and ``byog export`` unpack a verified bundle, one folder per sha256 of the bundle file."""
    return cache_dir() / "bundles"


def runs_dir() -> Path:
    """``$BYOG_RUNS_DIR``, else ``./runs``: the parent of every new run directory."""
    return Path(os.environ.get(RUNS_DIR_ENV) or "runs")


def resolve_data_dir(flag: Path | None = None) -> Path:
    """``--data-dir``, else ``$BYOG_DATA_DIR``, else the datasets shipped inside byog."""
    if flag is not None:
        if not Path(flag).is_dir():
            raise UsageError(f"--data-dir {flag} is not a directory")
        return Path(flag)
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        if not Path(env).is_dir():
            raise UsageError(f"{DATA_DIR_ENV}={env} is not a directory")
        return Path(env)
    return PACKAGED_DATASETS


def hub_data_dir(flag: Path | None = None) -> Path:
    """Where `byog data pull` keeps hub datasets: ``--data-dir``/``$BYOG_DATA_DIR``, else the cache."""
    if flag is not None or os.environ.get(DATA_DIR_ENV):
        return resolve_data_dir(flag)
    return cache_dir() / "datasets"
