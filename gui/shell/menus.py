"""The canvas's right-click menu: copy a name, expand or collapse, select a node's inputs or outputs,
show the model in Netron."""

from __future__ import annotations

from typing import Any, Protocol

from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QMenu, QWidget
from splitscope.engine.model import GraphModel
from splitscope.engine.view.layout import KIND_BLOCK, KIND_FRAME, KIND_NODE, View


class MenuHost(Protocol):
    """What the menu asks of the window."""

    @property
    def graph_model(self) -> GraphModel | None: ...
    @property
    def view(self) -> View | None: ...
    @property
    def canvas(self) -> Any: ...
    def highlight(self, nodes: list[int]) -> None: ...
    def toggle_group(self, gid: int) -> None: ...
    def expand_all(self) -> None: ...
    def collapse_all(self) -> None: ...
    def open_in_netron(self) -> None: ...
    def copy_canvas(self) -> None: ...
    @property
    def kernel_ui(self) -> Any: ...
    def window(self) -> QWidget: ...


def neighbours(gm: GraphModel | None, node: int, upstream: bool) -> list[int]:
    """The nodes feeding ``node`` (``upstream``) or fed by it, in the main graph."""
    if gm is None:
        return []
    adj = gm.graph.adj
    return list(adj.preds[node] if upstream else adj.succs[node])


def show_canvas_menu(window: MenuHost, item: int, pos: Any) -> QMenu | None:
    """Build and open the menu for ``item`` (-1: the empty canvas) at the global position ``pos``."""
    view = window.view
    gm = view.gm if view is not None else window.graph_model  # the graph on screen: a body too
    menu = QMenu(window.window())
    if view is not None and gm is not None and item >= 0:
        kind, ref = view.layout.kind[item], view.layout.ref[item]
        if kind == KIND_NODE:
            node = gm.nodes[ref]
            menu.addAction("Copy Name", lambda: QGuiApplication.clipboard().setText(node.label))
            menu.addAction("Select Inputs", lambda: window.highlight(neighbours(gm, ref, True)))
            menu.addAction("Select Outputs", lambda: window.highlight(neighbours(gm, ref, False)))
            if gm is window.graph_model:  # the main graph's nodes (a body's are cut with their owner)
                menu.addAction("Work It in the Kernel Workbench", lambda: window.kernel_ui.start([node.label]))
        elif kind in (KIND_BLOCK, KIND_FRAME):
            label = view.hier.full_label(ref)
            menu.addAction("Copy Name", lambda: QGuiApplication.clipboard().setText(label))
            menu.addAction("Expand" if kind == KIND_BLOCK else "Collapse", lambda: window.toggle_group(ref))
        menu.addSeparator()
    menu.addAction("Copy Canvas as Image", window.copy_canvas)
    menu.addAction("Fit", window.canvas.fit)
    menu.addAction("Expand All", window.expand_all)
    menu.addAction("Collapse All", window.collapse_all)
    if window.graph_model is not None and window.graph_model.path is not None:
        menu.addAction("Show in Netron", window.open_in_netron)
    menu.popup(pos)
    return menu
