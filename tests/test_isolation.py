"""The suite never writes the user's real settings, logs or data (QSettings and platformdirs)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REAL_HOME, USER_DIR_VARS

ROOT = Path(__file__).resolve().parents[1]
REAL = [
    REAL_HOME / ".config" / "Splitscope",
    REAL_HOME / ".config" / "splitscope",
    REAL_HOME / ".local" / "state" / "splitscope",
    REAL_HOME / ".local" / "share" / "splitscope",
    REAL_HOME / ".cache" / "splitscope",
]


def _snapshot() -> dict[str, float]:
    out = {}
    for d in REAL:
        if d.exists():
            for p in d.rglob("*"):
                out[str(p)] = p.stat().st_mtime
    return out


def test_user_locations_point_into_a_temporary_folder():
    from splitscope.engine.paths import cache_dir, config_dir, log_dir

    for var in USER_DIR_VARS:
        assert not Path(os.environ[var]).resolve().is_relative_to(REAL_HOME.resolve() / ".config"), var
    for d in (config_dir(), cache_dir(), log_dir()):
        assert not d.resolve().is_relative_to(REAL_HOME.resolve() / ".config")
        assert not d.resolve().is_relative_to(REAL_HOME.resolve() / ".local")


def test_the_app_run_by_a_test_leaves_real_settings_untouched(tmp_path):
    """The whole app (settings written at exit, log file) in a child process, as the GUI tests start it."""
    before = _snapshot()
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "main.py"), "--parser", "table", "--report-startup"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert _snapshot() == before, "a test run wrote into the user's real settings or logs"
    written = [*Path(os.environ["XDG_CONFIG_HOME"]).rglob("*"), *Path(os.environ["SPLITSCOPE_LOG_DIR"]).rglob("*")]
    assert written, "the app wrote its settings and log somewhere else than the test's folders"
