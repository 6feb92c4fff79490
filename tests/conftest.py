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


def _import_what_changes_the_process_on_import() -> None:
    """Libraries that change the process when first imported, whichever test imports them first: qtpy (where a
    library brings it) sets ``QT_API``; Ray puts its ``thirdparty_files`` on ``sys.path``. Imported once here,
    so that the check below sees what tests change, not what imports do."""
    import importlib
    import importlib.util

    for name in ("qtpy", "pyqtgraph", "ray"):
        if importlib.util.find_spec(name) is not None:
            importlib.import_module(name)


_import_what_changes_the_process_on_import()


@pytest.fixture(autouse=True)
def _leaves_the_process_as_it_found_it():
    """No test may leave ``sys.path``, the working folder or the environment changed (an earlier one that put
    ``bench/`` on the path hid the real ``netron`` from every later test): what a test changed is put back and the
    test fails, naming what it was. Set up before any ``monkeypatch``, so checked after it has undone its own."""
    import sys

    def environ() -> dict[str, str]:
        return {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}  # pytest's own, per phase

    path, cwd, env = list(sys.path), os.getcwd(), environ()
    yield
    changed = []
    if sys.path != path:
        changed.append(f"sys.path ({sorted(set(sys.path) ^ set(path))})")
        sys.path[:] = path
    if os.getcwd() != cwd:
        changed.append(f"the working folder ({os.getcwd()})")
        os.chdir(cwd)
    now = environ()
    if now != env:
        keys = sorted(k for k in set(env) | set(now) if env.get(k) != now.get(k))
        changed.append(f"the environment ({', '.join(keys)})")
        for k in keys:
            if k in env:
                os.environ[k] = env[k]
            else:
                del os.environ[k]
    assert not changed, "the test left changed: " + "; ".join(changed)


@pytest.fixture
def restores_environment():
    """For a test whose library changes the environment by design (``ray.init`` sets ``PYTHONBREAKPOINT`` and
    ``RAY_*`` in the process that starts it): the environment as it was is put back after it."""
    env = dict(os.environ)
    yield
    for k in set(os.environ) - set(env):
        del os.environ[k]
    os.environ.update(env)


@pytest.fixture(autouse=True)
def _isolated_user_dirs(_leaves_the_process_as_it_found_it, tmp_path_factory, monkeypatch):
    """Each test: its own config, cache, data, state and log folders."""
    _point_user_dirs(tmp_path_factory.mktemp("user"), monkeypatch.setenv)
    yield


@pytest.fixture
def test_job_kinds(monkeypatch):
    """Children of this test also run the tests' own job kinds (test-sleep, test-crash: tests/child_kinds.py)."""
    from tests import child_kinds

    monkeypatch.setenv("SPLITSCOPE_JOB_KINDS", child_kinds.entries())
