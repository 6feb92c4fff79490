"""The window's targets (QtCore only): the SSH hosts saved in the settings, the one jobs run on, and their checks.

Only addresses and options are saved (host, user, port, the target's Python and cache folder): keys stay in the
user's agent and ``~/.ssh``, host keys in ``~/.ssh/known_hosts``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Generator
from pathlib import Path

from PySide6.QtCore import QSettings
from splitscope.engine.jobs import CancelToken, JobEvent, Progress
from splitscope.engine.remote.target import Target, TargetCheck

_LIST = "targets/list"
_CURRENT = "targets/current"


def saved_targets() -> list[Target]:
    """The saved SSH targets, in the order the user added them."""
    try:
        items = json.loads(str(QSettings().value(_LIST, "[]")))
    except ValueError:
        return []
    out = []
    for d in items if isinstance(items, list) else []:
        if isinstance(d, dict) and d.get("host"):
            out.append(Target.from_json(d))
    return out


def save_targets(targets: list[Target]) -> None:
    """Save the SSH targets (this machine is never saved: it is always there)."""
    QSettings().setValue(_LIST, json.dumps([t.to_json() for t in targets if not t.local]))


def current_target() -> Target:
    """The target jobs run on (this machine unless the user chose a saved one)."""
    label = str(QSettings().value(_CURRENT, "local"))
    return next((t for t in saved_targets() if t.label == label), Target())


def set_current_target(target: Target) -> None:
    QSettings().setValue(_CURRENT, target.label)


def check_job(target: Target, token: CancelToken) -> Generator[JobEvent, None, TargetCheck]:
    """A job for the queue: connect, and say whether Splitscope runs there and on which GPU."""
    from splitscope.engine.remote.ssh import HostKeyUnknownError, RemoteError, check

    yield Progress("remote", 0, 0, f"Checking {target.label}")
    try:
        info = asyncio.run(check(target))
    except HostKeyUnknownError as e:
        return TargetCheck(False, e.message, unknown_key=True, algorithm=e.key_type, fingerprint=e.fingerprint)
    except RemoteError as e:
        return TargetCheck(False, e.message)
    token.raise_if_cancelled()
    return info


def trust_job(target: Target, fingerprint: str) -> Generator[JobEvent, None, Path]:
    """A job for the queue: record ``fingerprint`` as ``target``'s host key; the file it went to."""
    from splitscope.engine.remote.ssh import trust

    yield from ()
    return trust(target, fingerprint)
