"""The status bar's dependency badges (TensorRT, TensorRT-RTX, CUDA, NVML) and the About box that lists them.

Which optional backends import is found on a thread of its own (their imports take seconds): the badges fill in
when it is done; nothing of it is imported before the window shows."""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QApplication, QLabel, QMessageBox, QStatusBar, QWidget

LABELS = {"tensorrt": "TensorRT", "tensorrt-rtx": "TensorRT-RTX", "cuda": "CUDA", "nvml": "NVML"}


class _Relay(QObject):
    """Carries the probe's result from its thread to the UI thread."""

    done = Signal(object)


class DependencyBadges:
    """One badge a dependency in ``bar``; :attr:`status` is empty until the probe has answered."""

    def __init__(self, bar: QStatusBar) -> None:
        self.labels: dict[str, QLabel] = {}
        self.status: dict[str, Any] = {}
        for name, label in LABELS.items():
            b = QLabel(f"{label}: …")
            b.setObjectName(f"badge_{name}")
            b.setContentsMargins(6, 0, 6, 0)
            bar.addPermanentWidget(b)
            self.labels[name] = b
        self.thread: threading.Thread | None = None

    def probe(self) -> None:
        """Start the probe; the badges change when it answers."""
        relay = _Relay(QApplication.instance())  # outlives the window: a late result finds no deleted object
        relay.done.connect(self._show)
        relay.done.connect(relay.deleteLater)

        def probe() -> None:
            from splitscope.engine._optional import probe_all

            status = probe_all()  # never raises
            with contextlib.suppress(RuntimeError):  # the window closed meanwhile
                relay.done.emit(status)

        self.thread = threading.Thread(target=probe, name="probe-dependencies")  # joined at exit, not killed
        self.thread.start()

    def _show(self, status: dict[str, Any]) -> None:
        self.status.clear()
        self.status.update(status)
        for name, badge in self.labels.items():
            st = status[name]
            mark = "✔" if st.ready else "✖"
            # The mark says ready or not, the tooltip why: four badges with their states ("not installed", "no
            # device") took a third of a 1366 px status bar and cut its messages short.
            badge.setText(f"{mark} {LABELS[name]}")
            tip = f"{LABELS[name]}: {st.state.value}" + (f" {st.version}" if st.version else "")
            if st.error:
                tip += f"\n{st.error}"
            if not st.ready and st.fix:
                tip += f"\nFix: {st.fix}"
            badge.setToolTip(tip)

    def show_about(self, parent: QWidget, version: str) -> None:
        """About, with the state of each optional dependency."""
        lines = [f"<h3>Splitscope {version}</h3><p>What TensorRT takes, and what needs custom CUDA.</p><ul>"]
        for name, st in self.status.items():
            extra = f" {st.version}" if st.version else ""
            fix = f" — <code>{st.fix}</code>" if not st.ready and st.fix else ""
            lines.append(f"<li><b>{name}</b>: {st.state.value}{extra}{fix}</li>")
        lines.append("</ul>")
        QMessageBox.about(parent, "About Splitscope", "".join(lines))
