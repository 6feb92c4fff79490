"""Launch the Splitscope desktop app: ``python main.py [MODEL] [--parser ...] [--report-startup]``."""

import time

T0 = time.perf_counter()  # process start, for --report-startup

import sys  # noqa: E402

CHILDREN = ("splitscope.engine.split.parser_proc", "splitscope.engine.onnxio.shape_proc")


def _engine_child(argv: list[str]) -> int:
    """A frozen app has no ``python -m``: engine child processes start the app with --engine-child."""
    import importlib

    if argv[0] not in CHILDREN:
        sys.stderr.write(f"unknown engine child {argv[0]}\n")
        return 2
    return int(importlib.import_module(argv[0]).main(argv[1:]))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--engine-child":
        sys.exit(_engine_child(sys.argv[2:]))
    from splitscope.gui.launch import main

    sys.exit(main(sys.argv[1:], T0))
