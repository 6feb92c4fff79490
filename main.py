"""Launch the Splitscope desktop app: ``python main.py [MODEL] [--parser ...] [--report-startup]``."""

import time

T0 = time.perf_counter()  # process start, for --report-startup

import sys  # noqa: E402

from gui.app import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], T0))
