"""``python -m splitscope.engine.cli``."""

from __future__ import annotations

from splitscope.engine.cli.start import run

run()
