"""The ``splitscope`` command: one module per group of verbs (``analyze`` with the options every verb shares,
``engine``, ``generate``, ``kernel``, ``remote``, ``sweep``) and :mod:`.main`, which builds the parser and runs a
verb. ``python -m splitscope.engine.cli`` runs it."""

from __future__ import annotations

from splitscope.engine.cli.main import build_parser, main, run

__all__ = ["build_parser", "main", "run"]
