"""pyqtgraph, configured once for every panel of plots: ``from splitscope.gui.shell.charts import pg``.

Whichever module imports pyqtgraph first through here (a panel module, or the window's preload in a worker),
the colours every chart shares are set before any plot is made."""

from __future__ import annotations

import pyqtgraph as pg

pg.setConfigOptions(background="w", foreground="#333", antialias=True)

__all__ = ["pg"]
