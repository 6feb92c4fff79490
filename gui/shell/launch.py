"""Start the desktop app: arguments, the QApplication, logging of unexpected errors, ``--report-startup``."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QThreadPool, QTimer
from PySide6.QtWidgets import QApplication, QMessageBox
from splitscope.engine.sample import SAMPLE_MODEL
from splitscope.gui.shell.window import MainWindow


def _install_excepthook(app: QApplication) -> None:
    """Unexpected errors in slots: log them, tell the user where, keep the app running.

    PySide6 only prints exceptions raised in slots to stderr by default.
    """
    import logging
    import traceback

    from splitscope.engine.paths import log_dir

    log_file = log_dir() / "splitscope.log"
    logging.basicConfig(filename=log_file, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("splitscope")

    def hook(exc_type: type[BaseException], exc: BaseException, tb: Any) -> None:
        details = "".join(traceback.format_exception(exc_type, exc, tb))
        log.error("unexpected error\n%s", details)
        sys.__stderr__.write(details)
        parent = app.activeWindow()
        box = QMessageBox(
            QMessageBox.Icon.Critical,
            "Splitscope: unexpected error",
            f"{exc_type.__name__}: {exc}\n\nThe app keeps running; nothing you made was changed. "
            f"Details are in {log_file}.",
            parent=parent,
        )
        box.setDetailedText(details)
        box.open()
        hook.box = box  # type: ignore[attr-defined]

    sys.excepthook = hook


COLLECTION_WAIT_S = 120.0
"""The longest the collector waits for an analysis to end."""


def collect_on_ui_thread(app: QApplication, interval_ms: int = 1000) -> QTimer:
    """Python's cyclic garbage collector, run on the UI thread only, by a timer (automatic collection off).

    An automatic collection runs in whichever thread allocates next, often a worker's: the Qt objects it frees there
    leave their timers registered with the UI thread's dispatcher, and the next timer event goes to freed memory
    (the window crashed so, in QTimerInfoList::activateTimers, in about half the runs that opened a 200k-node
    export). pyqtgraph's GarbageCollector does the same; this one also waits while an engine job builds a large model
    with the collector paused (:func:`~splitscope.engine.jobs.gc_paused`), so that it never scans a half-built graph
    on the UI thread. While a model is being analysed (:func:`~splitscope.engine.jobs.collections_wait`),
    collections wait, for at most :data:`COLLECTION_WAIT_S`: a collection scans every object of its generations, and
    an analysis holds many for a while (at a million nodes, gen0 alone took 171 ms and a full collection 140-190
    ms); what it leaves is a few tables."""
    import gc

    from splitscope.engine.jobs import collections_waiting, gc_held

    threshold = gc.get_threshold()
    gc.disable()
    idle_at = [time.monotonic()]

    def check() -> None:
        if gc_held():
            return
        now = time.monotonic()
        if not collections_waiting():
            idle_at[0] = now
        elif now - idle_at[0] < COLLECTION_WAIT_S:
            return
        else:
            idle_at[0] = now  # waited long enough: collect now, then wait again
        l0, l1, l2 = gc.get_count()
        if l0 > threshold[0]:
            gc.collect(0)
            if l1 > threshold[1]:
                gc.collect(1)
                if l2 > threshold[2]:
                    gc.collect(2)

    timer = QTimer(app)
    timer.setInterval(interval_ms)
    timer.timeout.connect(check)
    timer.start()
    return timer


def main(argv: list[str] | None = None, t0: float | None = None) -> int:
    """Start the app: ``python main.py [MODEL] [--parser ...] [--report-startup]``."""
    t0 = t0 if t0 is not None else time.perf_counter()
    from splitscope.engine.entry import analyse_in_background
    from splitscope.engine.split.early import start
    from splitscope.gui.shell.args import window_parser

    ap = window_parser()
    args = ap.parse_args(argv)
    if args.model is not None:
        start(args.model, args.parser)  # started already when launched by main.py (before Qt's import)
    analyse_in_background()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setOrganizationName("Splitscope")
    app.setApplicationName("Splitscope")
    app.setDesktopFileName("splitscope")
    _install_excepthook(app)
    collect_on_ui_thread(app)
    window = MainWindow(args.parser)
    window.show()
    # Opened from the event loop: the window paints first, before the analysis starts to share the interpreter
    # (first show with a 50k-node model: 0.11-0.15 s after the window's import instead of 0.16-0.23 s).
    QTimer.singleShot(0, lambda: window.open_model(args.model or SAMPLE_MODEL))
    if args.report_startup or args.report_ready:
        _report_startup(app, window, t0, until_ready=args.report_ready)
    rc = app.exec()
    if QThreadPool.globalInstance().activeThreadCount():
        # A job still inside a long step (it stops at its next cancel check) would outlive the objects its
        # signals belong to. Settings are synced and every file is written atomically: end here.
        from splitscope.engine.split.early import stop_all

        stop_all()  # os._exit runs no atexit hook: a preview child not taken would outlive the window
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)
    return rc


def _stall_watch(beat: dict[str, Any]) -> Any:
    """A watchdog thread that, while the heartbeat is more than 50 ms late, samples what the UI thread is doing; the
    returned callable gives the innermost Python frames at the last sample of the longest stall ('' when none;
    ``launch.py … main`` alone: inside Qt's own code, or waiting for the interpreter a worker holds; with
    ``SPLITSCOPE_STALL_THREADS=1`` the other threads' innermost frames follow a ``|``). ``beat["stop"]`` set ends
    the thread; ``beat["longest"]`` holds the five longest stalls as (seconds, where at their last sample)."""
    import threading

    main = threading.main_thread().ident
    worst = {"gap": 0.0, "where": ""}
    longest: list[tuple[float, str]] = []  # the five longest stalls: (seconds, where at their last sample)

    def where(me: int) -> str | None:
        """What the UI thread (and, asked, the others) is doing now; no frame outlives the call (a frame kept
        would keep its locals alive: a replaced model among them)."""
        frames = sys._current_frames()
        try:  # cleared at the end: the dict holds this very frame too (a cycle only the collector would break)
            return _describe(frames, main or 0, me)
        finally:
            frames.clear()

    def watch() -> None:
        me = threading.get_ident()
        episode: tuple[float, str] | None = None
        while not beat.get("stop"):
            time.sleep(0.01)
            gap = time.perf_counter() - beat["last"]
            if gap > 0.05:
                text = where(me)
                if text is not None:
                    episode = (gap, text)
                    if gap > worst["gap"]:
                        worst["gap"], worst["where"] = gap, text
            elif episode is not None:  # the stall ended: keep it among the longest
                longest.append(episode)
                longest.sort(reverse=True)
                del longest[5:]
                episode = None

    threading.Thread(target=watch, name="splitscope-stall-watch", daemon=True).start()
    beat["longest"] = longest
    return lambda: worst["where"]


def _describe(frames: dict[int, Any], main: int, me: int) -> str | None:
    """The innermost frames of thread ``main`` as ``file:line function < ...`` (with ``SPLITSCOPE_STALL_THREADS``,
    the other threads' innermost frame too, ``me`` left out)."""
    import traceback

    frame = frames.get(main)
    if frame is None:
        return None
    full = traceback.extract_stack(frame)
    stack = [f for f in full if not f.filename.startswith("<frozen")][-4:]  # the import, not importlib
    text = ("importing: " if full[-1].filename.startswith("<frozen") else "") + " < ".join(
        f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(stack)
    )
    if os.environ.get("SPLITSCOPE_STALL_THREADS"):  # the other threads' innermost frames too
        tops = [traceback.extract_stack(f)[-1] for t, f in frames.items() if t not in (main, me)]
        text += " | " + "; ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in tops)
    return text


def _sizes(window: MainWindow) -> dict[str, Any]:
    """The window's, the canvas's and the available screen's sizes (logical pixels), and the screen's scaling."""
    screen = window.screen()
    area = screen.availableGeometry() if screen is not None else window.geometry()
    return {
        "window_px": [window.width(), window.height()],
        "canvas_px": [window.canvas.width(), window.canvas.height()],
        "screen_px": [area.width(), area.height()],
        "scale": screen.devicePixelRatio() if screen is not None else 1.0,
        "side_docks": _side_docks(window),
    }


def _side_docks(window: MainWindow) -> list[dict[str, Any]]:
    """Each side dock's title, height and whether it is tabbed with another (and on top)."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QDockWidget

    sides = (Qt.DockWidgetArea.LeftDockWidgetArea, Qt.DockWidgetArea.RightDockWidgetArea)
    return [
        {
            "title": d.windowTitle(),
            "height": d.height(),
            "tabbed": bool(window.tabifiedDockWidgets(d)),
            "shown": not d.visibleRegion().isEmpty(),
        }
        for d in window.findChildren(QDockWidget)
        if not d.isFloating() and window.dockWidgetArea(d) in sides
    ]


def _report_startup(app: QApplication, window: MainWindow, t0: float, until_ready: bool = False) -> None:
    """Print {window_s, layout_s, first_paint_s, nodes} measured from process start, then quit; ``until_ready``:
    after the final model is shown (``ready_s``), the longest UI stall counted until then."""
    app.processEvents()
    _StartupReport(app, window, t0, until_ready)


class _StartupReport:
    """The marks of one start, taken as the window's signals come (see :func:`_report_startup`)."""

    def __init__(self, app: QApplication, window: MainWindow, t0: float, until_ready: bool) -> None:
        self.app, self.window, self.t0, self.until_ready = app, window, t0, until_ready
        self.marks: dict[str, float] = {"window_s": time.perf_counter() - t0}
        self.layout_start: float | None = None
        # Heartbeat: a 5 ms timer on the UI thread; the longest gap between its ticks is
        # the longest time the UI thread could not react (analysis and layout run in workers).
        self.beat: dict[str, Any] = {"last": time.perf_counter(), "max": 0.0}
        heart = QTimer(window)
        heart.setInterval(5)
        heart.timeout.connect(self.tick)
        heart.start()
        self.stall_where = _stall_watch(self.beat)
        window.layout_runner.running_changed.connect(self.layout_started)
        window.controller.model_ready.connect(self.model_ready)
        window.view_ready.connect(self.ready)
        window.runner.job_failed.connect(self.failed)
        window.layout_runner.job_failed.connect(self.failed)
        window._startup_report = self  # type: ignore[attr-defined] - kept alive as long as the window

    def tick(self) -> None:
        now = time.perf_counter()
        self.beat["max"] = max(self.beat["max"], now - self.beat["last"])
        self.beat["last"] = now

    def layout_started(self, running: bool) -> None:
        if running and self.layout_start is None:
            self.layout_start = time.perf_counter()

    def painted(self) -> None:
        if "first_paint_s" in self.marks:
            return
        self.marks["first_paint_s"] = time.perf_counter() - self.t0
        self.marks["first_paint_stall"] = self.beat["max"]
        if not self.until_ready:
            self.report({})
        elif "ready_s" in self.marks:
            self.finish_ready()

    def model_ready(self, *_: object) -> None:
        if self.until_ready and "ready_s" not in self.marks:
            self.marks["ready_s"] = time.perf_counter() - self.t0
            if "first_paint_s" in self.marks:
                QTimer.singleShot(0, self.finish_ready)  # after the ready view's own redraw

    def finish_ready(self) -> None:
        stall = round(self.marks["first_paint_stall"] * 1000, 1)
        self.report({"ready_s": round(self.marks["ready_s"], 3), "first_paint_stall_ms": stall})

    def report(self, extra: dict[str, float]) -> None:
        w, marks = self.window, self.marks
        out = {
            "window_s": round(marks["window_s"], 3),
            "layout_s": round(marks["layout_s"], 3),
            "first_paint_s": round(marks["first_paint_s"], 3),
            "nodes": len(w.view.gm.nodes) if w.view else 0,
            "max_ui_stall_ms": round(self.beat["max"] * 1000, 1),
            "max_ui_stall_where": self.stall_where(),
            "ui_stalls": [[round(g * 1000), w] for g, w in self.beat.get("longest", [])],
            **w.canvas.on_screen(),
            **_sizes(w),
            **extra,
        }
        print(json.dumps(out), flush=True)
        w.cancel_jobs()
        QTimer.singleShot(0, w.close)

    def ready(self) -> None:
        if "layout_s" in self.marks:
            return  # the first view's figures (a preview's, then the final model's, may follow)
        now = time.perf_counter()
        self.marks["layout_s"] = now - (self.layout_start if self.layout_start is not None else now)
        self.window.canvas.painted.connect(self.painted, Qt.ConnectionType.SingleShotConnection)
        self.window.canvas.repaint()

    def failed(self, message: str, _details: str) -> None:
        print(json.dumps({"error": message}), flush=True)
        QTimer.singleShot(0, lambda: self.app.exit(2))
