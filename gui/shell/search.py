"""Search (Ctrl+F, Enter/F3 next, Shift+F3 previous) by node name or op type: the toolbar's field, its match
count, and stepping through the matches, expanding the collapsed groups on the way to one."""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QLabel, QLineEdit, QPushButton, QToolBar
from splitscope.engine.model import GraphModel, Node, Nodes
from splitscope.engine.text import plural
from splitscope.engine.view.find import LabelIndex
from splitscope.gui.canvas.canvas import GraphCanvas
from splitscope.gui.canvas.panels import Inspector
from splitscope.profiler.controller import AppController


class Search(QObject):
    """The search field and the matches it found (or a highlight set from elsewhere) to step through."""

    def __init__(self, controller: AppController, canvas: GraphCanvas, inspector: Inspector, toolbar: QToolBar) -> None:
        super().__init__(toolbar)
        self.controller, self.canvas, self.inspector = controller, canvas, inspector
        self.matches: list[int] = []
        self.pos = -1
        self._typed_on: Path | None = None
        """The file of the view on screen when the user last typed a search."""
        self._index: tuple[weakref.ref[Nodes], LabelIndex] | None = None
        """The labels of the nodes last searched, in one string (made in a worker when a model is shown); held by a
        weak reference to those nodes, so that it never keeps a model the window has let go of."""
        self.field = QLineEdit()
        self.field.setPlaceholderText("Search node name or op type (Ctrl+F)")
        self.field.setClearButtonEnabled(True)
        self.field.setMaximumWidth(320)
        self.field.returnPressed.connect(self._now_and_next)
        # Matching scans every node: wait until typing pauses (50k nodes take ~25 ms a scan).
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(150)
        self._timer.timeout.connect(self.refresh)
        self.field.textChanged.connect(lambda _t: self._timer.start())
        self.field.textChanged.connect(self._remember)
        controller.model_ready.connect(self._model_changed)
        controller.session.body_changed.connect(lambda *_: self.refresh())  # a body on screen is searched too
        toolbar.addWidget(self.field)
        prev_button = QPushButton("◀")
        prev_button.setToolTip("Previous match (Shift+F3)")
        prev_button.clicked.connect(self.previous)
        next_button = QPushButton("▶")
        next_button.setToolTip("Next match (F3)")
        next_button.clicked.connect(self.next)
        self.label = QLabel("")
        toolbar.addWidget(prev_button)
        toolbar.addWidget(next_button)
        toolbar.addWidget(self.label)

    def _remember(self, text: str) -> None:
        view = self.controller.view
        self._typed_on = view.gm.path if view is not None else None
        self.controller.remember_search(text)

    def _model_changed(self, gm: GraphModel | None = None, *_: object) -> None:
        """A model was opened: its own search comes back (none for a model new to this window); its labels are
        indexed in a worker meanwhile."""
        if gm is not None:
            from splitscope.profiler.workers import function_worker

            self._index = None
            nodes = weakref.ref(gm.nodes)
            worker = function_worker(LabelIndex, gm.nodes)
            worker.returned.connect(lambda index: self._indexed(nodes, index))
            worker.start()
        typed_here, self._typed_on = gm is not None and gm.path is not None and gm.path == self._typed_on, None
        if typed_here:  # typed on this model's first view while its analysis finished: the text stays, its own now
            self.controller.remember_search(self.field.text())
        else:
            self.field.blockSignals(True)
            self.field.setText(self.controller.results.search)
            self.field.blockSignals(False)
        self.refresh()

    def focus(self) -> None:
        """Ctrl+F."""
        self.field.setFocus()
        self.field.selectAll()

    def refresh(self) -> None:
        """Match the field's text against the open model (a new model is searched again)."""
        view = self.controller.view
        gm = view.gm if view is not None else self.controller.graph_model  # the graph on screen: a body too
        text = self.field.text().strip().lower()
        if gm is None or not text:
            self.matches = []
            self.canvas.highlight_nodes = set()
            self.label.setText("")
            self.canvas.update()
            return

        def hit(n: Node) -> bool:
            return text in n.label.lower() or text in n.op_type.lower()

        direct = self._find(gm, text)
        # Matches inside If / Loop / Scan bodies: their owner is highlighted (double-click opens it).
        inside = {
            i: sum(1 for sub in bodies.values() for _, m in sub.walk() if hit(m))
            for i, bodies in gm.nodes.subgraphs.items()
            if bodies
        }
        owners = [i for i, k in inside.items() if k]
        hits = _in_flow(sorted(set(direct) | set(owners)) if owners else direct, view)
        self.matches = hits
        self.pos = -1
        self.canvas.highlight_nodes = set(hits)
        deep = sum(inside.values())
        count = len(direct)
        inside = f"{plural(deep, 'match', 'matches')} inside the bodies of {plural(len(owners), 'node')}"
        if count and deep:
            label = f"{plural(count, 'match', 'matches')}, and {inside} (double-click to open)"
        elif deep:
            label = f"{inside}, highlighted (double-click to open)"
        else:
            label = f"{plural(count, 'match', 'matches')}" if count else "no match"
        self.label.setText(label)
        self.canvas.update()

    def _indexed(self, nodes: weakref.ref[Nodes], index: LabelIndex) -> None:
        if nodes() is not None:
            self._index = (nodes, index)

    def _find(self, gm: GraphModel, text: str) -> list[int]:
        """The nodes of ``gm`` whose label or op type holds ``text``: through its index (made now if the worker has
        not made it yet, or for a body on screen)."""
        if self._index is None or self._index[0]() is not gm.nodes:
            self._index = (weakref.ref(gm.nodes), LabelIndex(gm.nodes))
        return self._index[1].find(text)

    def highlight(self, nodes: list[int]) -> None:
        """Highlight ``nodes`` and go to the first (an op chosen in the table, the right-click menu)."""
        view = self.controller.view
        self.canvas.highlight_nodes = set(nodes)
        self.matches = sorted(nodes, key=lambda i: view.hier.topo_pos[i] if view else i)
        self.pos = -1
        self.next()

    def _now_and_next(self) -> None:
        if self._timer.isActive():
            self._timer.stop()
            self.refresh()
        self.next()

    def next(self) -> None:
        """Go to the next match (F3, Enter in the search field)."""
        self._go(+1)

    def previous(self) -> None:
        """Go to the previous match (Shift+F3)."""
        self._go(-1)

    def _go(self, step: int) -> None:
        view = self.controller.view
        if not self.matches or view is None:
            return
        self.pos = (self.pos + step) % len(self.matches)
        node = self.matches[self.pos]
        self.label.setText(f"{self.pos + 1} / {len(self.matches)}")
        self.inspector.show_node(node)
        hidden = [g for g in view.hier.path(view.hier.node_group[node]) if g not in view.layout.expanded]
        if hidden:  # inside collapsed groups: expand the way to it first
            self.controller.session.relayout(set(view.layout.expanded) | set(hidden), focus_node=node)
        else:
            self.canvas.select_node(node)


def _in_flow(nodes: list[int], view: Any) -> list[int]:
    """``nodes`` (in index order) in the order the graph flows on screen (its topological positions)."""
    if view is None or not nodes:
        return nodes
    at = np.asarray(nodes, np.int64)
    return at[np.argsort(np.asarray(view.hier.topo_pos, np.int64)[at], kind="stable")].tolist()
