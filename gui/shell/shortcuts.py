"""Help › Keyboard Shortcuts: every action of the window that has a key, read from the menus themselves (so the list
never falls behind them), and the canvas's own keys."""

from __future__ import annotations

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QMainWindow, QMenu, QTableWidget, QTableWidgetItem, QVBoxLayout

CANVAS_KEYS = (
    ("+ / -", "Canvas", "Zoom in / out (the wheel too)"),
    ("Up / Down", "Canvas", "Select the producer / a consumer of the selected item"),
    ("Left / Right", "Canvas", "Select the previous / next item fed by the same producer"),
    ("Enter", "Canvas", "Expand or collapse the selected block"),
    ("Double-click", "Canvas", "Expand a block; open an If/Loop/Scan body"),
)


def shortcut_rows(window: QMainWindow) -> list[tuple[str, str, str]]:
    """(keys, where, what) for every menu action with a shortcut, the window's own actions, then the canvas's."""
    rows: list[tuple[str, str, str]] = []

    def walk(menu: QMenu, path: str) -> None:
        for act in menu.actions():
            sub = act.menu()
            if isinstance(sub, QMenu):
                walk(sub, f"{path} › {sub.title().replace('&', '')}")
            elif not act.shortcut().isEmpty():
                keys = act.shortcut().toString(QKeySequence.SequenceFormat.NativeText)
                rows.append((keys, path, act.text().replace("&", "").rstrip("…")))

    for act in window.menuBar().actions():
        if isinstance(act.menu(), QMenu):
            walk(act.menu(), act.text().replace("&", ""))  # type: ignore[arg-type]
    for act in window.actions():
        if isinstance(act, QAction) and not act.shortcut().isEmpty():
            rows.append((act.shortcut().toString(QKeySequence.SequenceFormat.NativeText), "Window", act.text()))
    return rows + list(CANVAS_KEYS)


def show_shortcuts(window: QMainWindow) -> QDialog:
    """A table of :func:`shortcut_rows`."""
    dlg = QDialog(window)
    dlg.setWindowTitle("Keyboard Shortcuts")
    rows = shortcut_rows(window)
    table = QTableWidget(len(rows), 3, dlg)
    table.setHorizontalHeaderLabels(["Keys", "Where", "What"])
    table.verticalHeader().setVisible(False)
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            table.setItem(r, c, QTableWidgetItem(text))
    table.resizeColumnsToContents()
    table.horizontalHeader().setStretchLastSection(True)
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
    buttons.rejected.connect(dlg.reject)
    lay = QVBoxLayout(dlg)
    lay.addWidget(table)
    lay.addWidget(buttons)
    dlg.resize(620, 480)
    dlg.show()
    return dlg
