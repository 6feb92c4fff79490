"""The one palette: ``resources/palette.json``, read once, for the window (as Qt colours, in gui/palette.py),
the report's SVG figures and HTML template, and Model Explorer node data. Values are ``#rrggbb`` strings."""

from __future__ import annotations

import functools
import json
from typing import Any

from splitscope.engine.sample import resource


@functools.cache
def colour_table() -> dict[str, Any]:
    """Every named colour (see the file's ``_about``)."""
    return json.loads(resource("palette.json").read_text(encoding="utf-8"))


def theme(dark: bool) -> dict[str, Any]:
    """The light or dark set of the canvas's colours."""
    return colour_table()["dark" if dark else "light"]
