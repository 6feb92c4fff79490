"""The ``splitscope`` command: one module per group of verbs (``analyze`` with the options every verb shares,
``engine``, ``generate``, ``kernel``, ``remote``, ``sweep``), :mod:`.main`, which builds the parser and runs a
verb, and :mod:`.start`, the console script. ``python -m splitscope.engine.cli`` runs it."""

from __future__ import annotations

from splitscope.engine.cli.main import build_parser, main
from splitscope.engine.cli.start import run

__all__ = ["build_parser", "main", "run"]
