"""One registry of the ways in (splitscope.engine.entry), used by the launcher, the PyInstaller spec and these
tests: the launcher runs a CLI verb when its first argument is one and an engine child with
--engine-child NAME, exactly as the frozen app's binary does (main.py is that binary's script)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from splitscope.engine import entry
from splitscope.engine.cli import build_parser

from tests.engine.models import LIGHT_DIR

ROOT = Path(__file__).resolve().parents[1]


def _main(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "main.py", *argv], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )


def test_the_verbs_are_the_clis():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert set(entry.VERBS) == set(sub.choices)  # type: ignore[arg-type]


def test_every_child_module_has_a_main():
    import importlib

    for name, module in entry.CHILDREN.items():
        assert callable(getattr(importlib.import_module(module), "main", None)), name


def test_a_frozen_app_reenters_itself_for_each_child(monkeypatch):
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    for name in entry.CHILDREN:
        assert entry.child_command(name, "x") == [sys.executable, entry.FROZEN_FLAG, name, "x"]
    monkeypatch.setattr(sys, "frozen", False)
    assert entry.child_command("job", "x") == [sys.executable, "-m", "splitscope.engine.child", "x"]


def test_the_spec_reads_the_registry():
    spec = (ROOT / "packaging" / "splitscope.spec").read_text()
    assert "from splitscope.engine.entry import CHILDREN" in spec and "*CHILDREN.values()" in spec


def test_the_launcher_runs_a_verb(tmp_path):
    out = tmp_path / "a.json"
    r = _main("analyze", "--parser", "table", "--json", str(out), "-q")
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["nodes"] > 0


def test_the_launcher_runs_a_child_and_refuses_an_unknown_one():
    r = _main(entry.FROZEN_FLAG, "check", str(LIGHT_DIR / "light_squeezenet.onnx"), "ort", "{}")
    assert r.returncode == 0 and json.loads(r.stdout.strip().splitlines()[-1])["ok"] is True, r.stderr
    r = _main(entry.FROZEN_FLAG, "no-such-child", "x")
    assert r.returncode == 2 and "unknown engine child" in r.stderr


def test_help_names_the_verbs_and_the_window():
    r = _main("--help")
    assert r.returncode == 0 and all(v in r.stdout for v in entry.VERBS) and "Without a verb, the window" in r.stdout
    for option in ("--parser", "--report-startup", "--report-ready", "splitscope-gui"):  # the window's own
        assert option in r.stdout.split("Without a verb, the window", 1)[1], option
