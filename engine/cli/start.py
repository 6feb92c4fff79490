"""The console script's first step (``splitscope``, ``python -m splitscope.engine.cli``): light, so that for
``analyze`` the real parser starts before the rest of the engine is imported, then the command line itself
(:mod:`.main`)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

QUICK_EXIT = frozenset({"analyze"})
"""Verbs that leave nothing to tidy at exit (no Ray, no temporary folder, no child left): they end without the
interpreter's teardown, which frees a large model's heap one object at a time (0.1 s at 50k nodes) for the OS to
throw away anyway."""


def _parser_first(argv: list[str]) -> argparse.Namespace | None:
    """``analyze MODEL``: start the parser on MODEL now (it takes most of the time; the rest of the analysis runs
    beside it). The command line is read by its own parser, quietly, and returned to be run; None for any other
    verb, or a mistake (the command line says it in its own words when it reads the line again)."""
    if not argv or argv[0] != "analyze":
        return None
    import io

    from splitscope.engine.cli.main import build_parser

    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            args = build_parser().parse_args(argv)
    except SystemExit:  # --help, or a mistake
        return None
    if getattr(args, "model", None) is not None:  # not the bundled sample: too small to be worth a head start
        from splitscope.engine.split.parser import start_early

        with contextlib.suppress(Exception):  # the analysis starts it again and says what is wrong
            start_early(args.parser, str(args.model))
    return args


def run() -> None:
    """Run the command line on ``sys.argv`` and exit with its status."""
    argv = sys.argv[1:]
    args = _parser_first(argv)
    from splitscope.engine.cli.main import execute, main
    from splitscope.engine.split.parser import drop_early

    try:
        rc = main(argv) if args is None else execute(args)
    finally:
        drop_early()
    if argv and argv[0] in QUICK_EXIT:
        with contextlib.suppress(OSError):  # a reader gone away (| head) has nothing more to take
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(rc)
    sys.exit(rc)
