"""The input shapes in force for a model: the values given for its symbolic dims, remembered per model
(by content, not path) in the settings, shared by every dialog that asks for them (Profile, Calibrate)."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import QSettings


def saved_dims(key: str) -> dict[str, int]:
    """The symbolic dims last given for the model of content key ``key``."""
    raw = QSettings().value(f"profile/dims/{key}", "")
    try:
        d = json.loads(str(raw)) if raw else {}
        return {str(k): int(v) for k, v in d.items()} if isinstance(d, dict) else {}
    except (ValueError, TypeError):
        return {}


def remembered_dims(path: str | Path) -> dict[str, int]:
    """The dims last given for the model at ``path`` (by its content), {} when none or unreadable."""
    from splitscope.engine.runtime.store import model_key

    try:
        return saved_dims(model_key(path))
    except OSError:
        return {}


def remember_dims(key: str, dims: dict[str, int]) -> None:
    """Remember the dims given for the model of content key ``key``."""
    QSettings().setValue(f"profile/dims/{key}", json.dumps(dims))
