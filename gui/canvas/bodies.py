"""Inside control flow: double-click an If / Loop / Scan node to open its body on the canvas. A bar above the
canvas shows the way in (the model › the If › then_branch), switches between the node's bodies and goes back
(Back, or Alt+Left); the inspector follows the graph on screen."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QLabel, QPushButton, QToolBar

if TYPE_CHECKING:
    from splitscope.gui.shell.host import Shell


class BodyNavigator:
    """The breadcrumb bar and the canvas's way into bodies."""

    def __init__(self, shell: Shell, toolbar: QToolBar) -> None:
        self.shell = shell
        self.session = shell.controller.session
        self.bar = toolbar
        self.bar.setObjectName("toolbar_body")
        back = QPushButton("◀ Back")
        back.setToolTip("Back to the graph this body was opened from (Alt+Left)")
        back.setShortcut(QKeySequence("Alt+Left"))
        back.clicked.connect(self.session.close_body)
        self.bar.addWidget(back)
        self.crumbs = QLabel()
        self.crumbs.setObjectName("body_crumbs")
        self.bar.addWidget(self.crumbs)
        self.siblings: list[Any] = []
        self.bar.setVisible(False)
        shell.canvas.body_requested.connect(self.open)
        self.session.body_changed.connect(self._changed)

    def open(self, node: int) -> None:
        self.shell.show_message("Opening the body…", 3000)
        self.session.open_body(node)

    def _changed(self, crumbs: list[str]) -> None:
        for a in self.siblings:
            self.bar.removeAction(a)
        self.siblings = []
        view = self.session.view
        gm = self.shell.controller.graph_model
        if not crumbs or view is None:
            self.bar.setVisible(False)
            if gm is not None and self.session.view is not None:
                self.shell.inspector.set_model(gm, self.session.view.hier)
                self._panels(self.session.view)
            return
        name = gm.path.name if gm is not None and gm.path is not None else "model"
        self.crumbs.setText(f"  {name} › " + " › ".join(crumbs) + f"  ({len(view.gm.nodes)} nodes)")
        outer = self.session.outer_views[-1] if self.session.outer_views else None
        owner = outer.gm.nodes[view.owner[0]] if outer is not None and view.owner is not None else None
        if owner is not None and view.owner is not None and len(owner.subgraphs) > 1:
            shown = view.owner[1]
            for body in owner.subgraphs:
                if body != shown:
                    b = QPushButton(f"Show {body}")
                    b.clicked.connect(lambda _=False, x=body: self.session.switch_body(x))
                    self.siblings.append(self.bar.addWidget(b))
        self.bar.setVisible(True)
        self.shell.inspector.set_model(view.gm, view.hier)
        self._panels(view)

    def _panels(self, view: Any) -> None:
        """The summary and ops panels speak of the graph on screen: the body's, or the model's again."""
        window: Any = self.shell
        if view.stats is None or not hasattr(window, "ops"):
            return
        from splitscope.gui.shell.palette import make_palette

        window.ops.set_rows(view.stats["ops"])
        window.summary.set_stats(view.gm, view.stats, make_palette(window._is_dark()))
