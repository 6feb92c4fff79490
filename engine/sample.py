"""Where the bundled files live (a module of its own so the GUI can name them without importing onnx)."""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path


def resource(name: str) -> Path:
    """A file shipped in ``splitscope.resources`` (the repository's ``resources/`` folder)."""
    spec = find_spec("splitscope.resources")
    assert spec is not None and spec.submodule_search_locations, "splitscope.resources is missing"
    return Path(next(iter(spec.submodule_search_locations))) / name


SAMPLE_MODEL = resource("sample.onnx")
