"""``python -m splitscope.engine.cli``."""

from __future__ import annotations

import sys

from splitscope.engine.cli.main import main

sys.exit(main())
