"""Where Splitscope keeps files: per-user config, cache and log folders (platformdirs).

``SPLITSCOPE_CONFIG_DIR``, ``SPLITSCOPE_CACHE_DIR``, ``SPLITSCOPE_DATA_DIR`` and ``SPLITSCOPE_LOG_DIR``
override them (tests, portable installs). Window layout and recent files live in
QSettings; these folders hold files: logs now, engine plans and timing caches later.
"""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import PlatformDirs

_DIRS = PlatformDirs("splitscope", "Splitscope")


def _dir(env: str, default: str) -> Path:
    p = Path(os.environ.get(env) or default)
    p.mkdir(parents=True, exist_ok=True)
    return p


def config_dir() -> Path:
    """Per-user settings folder."""
    return _dir("SPLITSCOPE_CONFIG_DIR", _DIRS.user_config_dir)


def cache_dir() -> Path:
    """Per-user cache folder (engine plans, timing caches)."""
    return _dir("SPLITSCOPE_CACHE_DIR", _DIRS.user_cache_dir)


def data_dir() -> Path:
    """Per-user data folder (saved profiles and calibrations, by model)."""
    return _dir("SPLITSCOPE_DATA_DIR", _DIRS.user_data_dir)


def log_dir() -> Path:
    """Per-user log folder."""
    return _dir("SPLITSCOPE_LOG_DIR", _DIRS.user_log_dir)


def _read_umask() -> int:
    """The process's umask, read without changing it (Linux: /proc; elsewhere set and restored once, at import,
    before any worker thread exists)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def file_mode() -> int:
    """The permissions a plain ``open(path, "w")`` gives a new file (mkstemp's are 0600)."""
    return 0o666 & ~_UMASK
