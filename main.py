"""Launch Splitscope: ``python main.py [MODEL] [--parser ...] [--report-startup]`` opens the window;
``python main.py VERB ...`` (a CLI verb: analyze, optimize, profile, engine, calibrate, report) runs the CLI.
The frozen app's binary is this file, so ``dist/splitscope/splitscope analyze MODEL`` works the same, and
engine child processes re-enter it (``--engine-child NAME ARGS``; the registry is splitscope.engine.entry)."""

import time

T0 = time.perf_counter()  # process start, for --report-startup

import sys  # noqa: E402


def dispatch(argv: list[str]) -> int:
    """A child process, a CLI verb, or the window, by the first argument."""
    from splitscope.engine.entry import FROZEN_FLAG, VERBS, run_child

    if len(argv) >= 2 and argv[0] == FROZEN_FLAG:
        return run_child(argv[1], argv[2:])
    if argv and argv[0] in VERBS:
        from splitscope.engine.cli import main as cli

        return cli(argv)
    if argv[:1] in (["-h"], ["--help"]):
        from splitscope.engine.cli import build_parser
        from splitscope.gui.shell.args import window_parser

        build_parser().print_help()
        print("\nWithout a verb, the window:\n")
        window_parser().print_help()
        return 0
    from splitscope.gui.shell.args import start_preview

    start_preview(argv)  # a large file's structure read on the second core while Qt loads
    from splitscope.gui.shell.launch import main as window

    return window(argv, T0)


if __name__ == "__main__":
    sys.exit(dispatch(sys.argv[1:]))
