"""Tools › Targets…: the SSH hosts jobs can run on. Add one by address, check it (Splitscope there, its version and
GPU, or the pip command to run), trust its host key after comparing the fingerprint (asked, never silent), choose
the one jobs run on. Checks run as jobs in the queue (progress, Cancel); the dialog never waits on the network."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)
from splitscope.engine.errors import SplitscopeError
from splitscope.engine.remote.target import Target, TargetCheck, parse_target
from splitscope.profiler.queue import JobKind, Lane
from splitscope.profiler.targets import (
    check_job,
    current_target,
    save_targets,
    saved_targets,
    set_current_target,
    trust_job,
)

if TYPE_CHECKING:
    from splitscope.profiler.controller import AppController


class TargetsDialog(QDialog):
    """The saved targets, each with what its last check said."""

    def __init__(self, controller: AppController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Targets")
        self.setMinimumWidth(640)
        self.controller = controller
        self.targets = saved_targets()
        self.status: dict[str, str] = {}
        self._checks: dict[int, Target] = {}
        self._trusts: dict[int, Target] = {}
        self._keys: dict[str, tuple[str, str]] = {}
        """Per target, the (algorithm, fingerprint) of the unknown host key its last check saw."""
        lay = QVBoxLayout(self)
        intro = QLabel(
            "Jobs (profile, calibrate, sweeps) run on this machine or on an SSH host with Splitscope installed. "
            "Keys come from your SSH agent and ~/.ssh, host keys from ~/.ssh/known_hosts; nothing secret is saved."
        )
        intro.setWordWrap(True)
        lay.addWidget(intro)
        self.list = QListWidget()
        self.list.setObjectName("targets_list")
        lay.addWidget(self.list, 1)
        add = QHBoxLayout()
        self.address = QLineEdit()
        self.address.setPlaceholderText("ssh://user@gpu-box:22 or a host alias of ~/.ssh/config")
        self.python = QLineEdit()
        self.python.setPlaceholderText("python3 (the target's Python with Splitscope)")
        add_button = QPushButton("Add")
        add_button.clicked.connect(self._add)
        add.addWidget(self.address, 3)
        add.addWidget(self.python, 2)
        add.addWidget(add_button)
        lay.addLayout(add)
        buttons = QHBoxLayout()
        for text, slot in (
            ("Check", self._check),
            ("Trust Host Key…", self._trust),
            ("Run Jobs Here", self._use),
            ("Remove", self._remove),
        ):
            b = QPushButton(text)
            b.clicked.connect(slot)
            buttons.addWidget(b)
        lay.addLayout(buttons)
        self.message = QLabel("")
        self.message.setObjectName("targets_message")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.message)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close.rejected.connect(self.reject)
        lay.addWidget(close)
        controller.queue.finished.connect(self._checked)
        controller.queue.failed.connect(lambda jid, msg, _d: self._failed(jid, msg))
        self._refill()

    def _refill(self) -> None:
        current = current_target().label
        chosen = self.list.currentItem().data(Qt.ItemDataRole.UserRole) if self.list.currentItem() else None
        self.list.clear()
        for t in [Target(), *self.targets]:
            mark = "● " if t.label == current else "   "
            name = "This machine" if t.local else t.label
            extra = "" if t.local or t.python == "python3" else f"  (Python {t.python})"
            item = QListWidgetItem(f"{mark}{name}{extra}    {self.status.get(t.label, '')}".rstrip())
            item.setData(Qt.ItemDataRole.UserRole, t.label)
            self.list.addItem(item)
            if t.label == chosen:
                self.list.setCurrentItem(item)

    def _selected(self) -> Target | None:
        item = self.list.currentItem()
        if item is None:
            return None
        label = item.data(Qt.ItemDataRole.UserRole)
        return next((t for t in [Target(), *self.targets] if t.label == label), None)

    def add_target(self, text: str, python: str = "") -> Target | None:
        """Add a target by address (also what the Add button does); a bad address is said, nothing added."""
        try:
            t = parse_target(text, **({"python": python} if python else {}))
        except SplitscopeError as e:
            self.message.setText(e.message)
            return None
        if t.local:
            self.message.setText("This machine is always there.")
            return None
        self.targets = [o for o in self.targets if o.label != t.label] + [t]
        save_targets(self.targets)
        self.message.setText(f"Added {t.label}: Check it to see whether Splitscope runs there.")
        self._refill()
        return t

    def _add(self) -> None:
        if self.add_target(self.address.text(), self.python.text().strip()) is not None:
            self.address.clear()

    def check(self, t: Target) -> int:
        """Check ``t`` in a job; its answer lands in the list and the message line."""
        jid = self.controller.queue.submit(
            f"Check {t.label}", lambda token: check_job(t, token), lane=Lane.REMOTE, kind=JobKind.TARGET_CHECK
        )
        self._checks[jid] = t
        self.status[t.label] = "checking…"
        self._refill()
        return jid

    def _check(self) -> None:
        t = self._selected()
        if t is None or t.local:
            self.message.setText("Choose an SSH target to check.")
            return
        self.check(t)

    def _checked(self, jid: int) -> None:
        trusted = self._trusts.pop(jid, None)
        if trusted is not None:
            rec = self.controller.queue.jobs.get(jid)
            path = rec.result if rec is not None and isinstance(rec.result, Path) else None
            self._keys.pop(trusted.label, None)
            self.message.setText(f"Trusted {trusted.label} in {path}.")
            self.check(trusted)
            return
        t = self._checks.pop(jid, None)
        rec = self.controller.queue.jobs.get(jid)
        if t is None or rec is None or not isinstance(rec.result, TargetCheck):
            return
        r = rec.result
        if r.ok:
            self.status[t.label] = f"Splitscope {r.version}, {r.gpus_text}"
            self.message.setText(f"{t.label}: {r.summary}.")
        else:
            self.status[t.label] = "host key unknown" if r.unknown_key else "not ready"
            self.message.setText(r.message or "The check failed.")
            if r.unknown_key:
                self._keys[t.label] = (r.algorithm, r.fingerprint)
        self._refill()

    def _failed(self, jid: int, msg: str) -> None:
        t = self._checks.pop(jid, None) or self._trusts.pop(jid, None)
        if t is not None:
            self.status[t.label] = "not ready"
            self.message.setText(msg)
            self._refill()

    def _trust(self) -> None:
        t = self._selected()
        if t is None or t.local:
            self.message.setText("Choose an SSH target whose host key to trust.")
            return
        seen = self._keys.get(t.label)
        if seen is None:
            self.message.setText(f"Checking {t.label} first: its host key is shown when it is not known yet.")
            self.check(t)
            return
        self.ask_trust(t, *seen)

    def ask_trust(self, t: Target, algorithm: str, fingerprint: str) -> bool:
        """Ask whether to trust the key the check saw; on Yes, record it in a job (it reads the key again and
        writes nothing if it changed), then check again."""
        from splitscope.engine.remote.ssh import known_hosts_path

        answer = QMessageBox.question(
            self,
            "Trust this host key?",
            f"{t.label} shows the host key\n\n{algorithm} {fingerprint}\n\nCompare it with the machine's own "
            f"(ssh-keygen -lf on its host key). Trust it and add it to {known_hosts_path(t)}?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No,
        )
        if answer != QMessageBox.StandardButton.Yes:
            self.message.setText("Not trusted: nothing was written.")
            return False
        self.trust(t, fingerprint)
        return True

    def trust(self, t: Target, fingerprint: str) -> int:
        """Record ``fingerprint`` for ``t`` in a job, then check ``t`` again."""
        jid = self.controller.queue.submit(
            f"Trust {t.label}'s host key",
            lambda _token: trust_job(t, fingerprint),
            lane=Lane.REMOTE,
            kind=JobKind.TARGET_TRUST,
        )
        self._trusts[jid] = t
        return jid

    def _use(self) -> None:
        t = self._selected()
        if t is None:
            return
        set_current_target(t)
        self.message.setText(f"Jobs run on {'this machine' if t.local else t.label} (the dialogs can choose another).")
        self._refill()

    def _remove(self) -> None:
        t = self._selected()
        if t is None or t.local:
            return
        self.targets = [o for o in self.targets if o.label != t.label]
        save_targets(self.targets)
        if current_target().label == t.label:
            set_current_target(Target())
        self._refill()
