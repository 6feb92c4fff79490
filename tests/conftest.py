"""Shared fixtures. GUI tests default to the offscreen Qt platform.

No test may touch the user's real settings, logs or data: before anything is imported, every
per-user location (XDG folders, Splitscope's own overrides) points into a temporary folder for
the whole session, child processes included; each test then gets folders of its own.
tests/test_isolation.py proves the real ones stay untouched.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

USER_DIR_VARS = (
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
    "SPLITSCOPE_CONFIG_DIR",
    "SPLITSCOPE_CACHE_DIR",
    "SPLITSCOPE_DATA_DIR",
    "SPLITSCOPE_LOG_DIR",
)
REAL_HOME = Path(os.path.expanduser("~"))
_SESSION_DIR = Path(tempfile.mkdtemp(prefix="splitscope-tests-"))


def _point_user_dirs(base: Path, setenv) -> None:  # type: ignore[no-untyped-def]
    for var in USER_DIR_VARS:
        d = base / var.lower()
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        setenv(var, str(d))


_point_user_dirs(_SESSION_DIR, os.environ.__setitem__)


def pytest_sessionfinish(session, exitstatus):  # type: ignore[no-untyped-def]
    shutil.rmtree(_SESSION_DIR, ignore_errors=True)


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory, monkeypatch):
    """Each test: its own config, cache, data, state and log folders."""
    _point_user_dirs(tmp_path_factory.mktemp("user"), monkeypatch.setenv)
    yield
