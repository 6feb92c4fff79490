"""Launch the Splitscope desktop app: ``python main.py [MODEL]``."""

from __future__ import annotations

import sys

from gui.app import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
