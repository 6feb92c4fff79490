"""How the engine starts its child processes (parser, shape inference), frozen or not."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def child_env() -> tuple[dict[str, str], str]:
    """Environment and working folder for an engine child process (``python -m splitscope.engine....``)."""
    import splitscope

    root = str(Path(splitscope.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env, root


def child_command(module: str, *args: str) -> list[str]:
    """Command line that runs ``module``'s ``main(args)`` in a child process.

    In a frozen (PyInstaller) app ``sys.executable`` is the app itself, which has
    no ``-m``: it is started with ``--engine-child MODULE`` instead (see main.py).
    """
    if getattr(sys, "frozen", False):
        return [sys.executable, "--engine-child", module, *args]
    return [sys.executable, "-m", module, *args]
