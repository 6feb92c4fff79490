"""The console script's first step (``splitscope``, ``python -m splitscope.engine.cli``): light, so that for
``analyze`` the real parser starts before the rest of the engine is imported, then the command line itself
(:mod:`.main`)."""

from __future__ import annotations

import contextlib
import os
import sys

QUICK_EXIT = frozenset({"analyze"})
"""Verbs that leave nothing to tidy at exit (no Ray, no temporary folder, no child left): they end without the
interpreter's teardown, which frees a large model's heap one object at a time (0.1 s at 50k nodes) for the OS to
throw away anyway."""


def _parser_first(argv: list[str]) -> None:
    """``analyze MODEL [--parser P]``: start the parser on MODEL now (it takes most of the time; the rest of the
    analysis runs beside it). Anything else, or anything unclear, is left to the command line."""
    if len(argv) < 2 or argv[0] != "analyze" or any(a in ("-h", "--help") for a in argv):
        return
    import argparse

    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("model")
    ap.add_argument("--parser", default="auto")
    known, _ = ap.parse_known_args(argv[1:])
    from splitscope.engine.split.parser import start_early

    with contextlib.suppress(Exception):  # the analysis starts it again and says what is wrong
        start_early(known.parser, known.model)


def run() -> None:
    """Run the command line on ``sys.argv`` and exit with its status."""
    argv = sys.argv[1:]
    _parser_first(argv)
    from splitscope.engine.cli.main import main
    from splitscope.engine.split.parser import drop_early

    try:
        rc = main(argv)
    finally:
        drop_early()
    if argv and argv[0] in QUICK_EXIT:
        with contextlib.suppress(OSError):  # a reader gone away (| head) has nothing more to take
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(rc)
    sys.exit(rc)
