"""The window's command line (Qt-free, so that ``main.py --help`` answers at once): ``splitscope-gui [MODEL]
[--parser ...] [--report-startup] [--report-ready]``."""

from __future__ import annotations

import argparse
import contextlib
import io
from pathlib import Path


def window_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="splitscope-gui", description="The Splitscope window, on MODEL (default: the bundled sample)."
    )
    ap.add_argument("model", nargs="?", type=Path, help="ONNX model (default: the bundled sample)")
    ap.add_argument(
        "--parser",
        choices=["auto", "tensorrt", "rtx", "table"],
        default="auto",
        help="who splits the model: TensorRT if installed, else TensorRT-RTX, else the support table (auto)",
    )
    ap.add_argument(
        "--report-startup",
        action="store_true",
        help="open the model, print one JSON line of startup figures (timings, what the first view shows, the "
        "window's, canvas's and screen's sizes), and exit",
    )
    ap.add_argument(
        "--report-ready",
        action="store_true",
        help="as --report-startup, but wait for the final model (ready_s; the longest UI stall until then)",
    )
    return ap


def start_preview(argv: list[str]) -> None:
    """Start making the preview of the model named on the command line in a child process, before Qt is imported
    (:func:`splitscope.engine.split.early.start`): it reads a large file on the second core while the window is
    made. Nothing for the bundled sample, a small file or arguments the window will refuse."""
    quiet = io.StringIO()
    try:  # quietly: the window's own parse says what is wrong, once
        with contextlib.redirect_stderr(quiet), contextlib.redirect_stdout(quiet):
            args = window_parser().parse_args(argv)
    except SystemExit:
        return
    if args.model is not None:
        from splitscope.engine.split.early import start

        start(args.model, args.parser)
