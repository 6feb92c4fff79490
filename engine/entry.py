"""Every way into the engine, in one registry: the CLI's verbs and the child processes it starts.

The launcher (``main.py``, which is also the frozen app's entry point), the PyInstaller spec and the tests all
read these tables, so a verb or child added here works the same from a checkout, an installed package and the
bundle. A frozen app has no ``python -m``: a child re-enters the app binary as ``--engine-child NAME ARGS``.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

VERBS = ("analyze", "optimize", "profile", "engine", "calibrate", "kernel", "report", "sweep", "targets")
"""The CLI's verbs (``splitscope VERB ...``); the bundle runs the CLI when its first argument is one."""

CHILDREN: dict[str, str] = {
    "parser": "splitscope.engine.split.parser_proc",
    "shapes": "splitscope.engine.onnxio.shape_proc",
    "job": "splitscope.engine.child",
    "check": "splitscope.engine.runtime.written",
    "preview": "splitscope.engine.split.preview_proc",
}
"""Child processes by name: the module whose ``main(argv)`` runs in the child. ``job`` runs the native jobs
(profile, calibrate, the TensorRT build) through one event protocol (:mod:`splitscope.engine.child`)."""

FROZEN_FLAG = "--engine-child"


def child_env() -> tuple[dict[str, str], str]:
    """Environment and working folder for an engine child process (a checkout's folders on its path)."""
    import splitscope

    root = str(Path(splitscope.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env, root


def child_command(name: str, *args: str) -> list[str]:
    """Command line that runs the child ``name`` (a key of :data:`CHILDREN`) with ``args``."""
    module = CHILDREN[name]
    if getattr(sys, "frozen", False):
        return [sys.executable, FROZEN_FLAG, name, *args]
    return [sys.executable, "-m", module, *args]


def run_child(name: str, argv: list[str]) -> int:
    """Run the child ``name`` in this process (the frozen app's ``--engine-child``); 2 for an unknown one."""
    if name not in CHILDREN:
        sys.stderr.write(f"splitscope: unknown engine child {name!r} (known: {', '.join(CHILDREN)})\n")
        return 2
    return int(importlib.import_module(CHILDREN[name]).main(argv))
