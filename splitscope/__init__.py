"""Splitscope: which parts of an ONNX model TensorRT takes, which need custom CUDA, measured.

Installed, ``splitscope.engine``, ``.profiler``, ``.gui`` and ``.resources`` are
the repository's top-level folders of those names (setuptools ``package-dir``).
Run from a checkout without installing (``python main.py``, pytest), this
package's path also covers the repository root, so the same imports work there.
"""

from __future__ import annotations

from pathlib import Path

__version__ = "0.1.0"

_here = Path(__file__).resolve().parent
if (
    not (_here / "engine").is_dir()
    and (_here.parent / "engine" / "__init__.py").is_file()
    and (_here.parent / "main.py").is_file()
):
    __path__.append(str(_here.parent))  # a checkout: the design card's folders sit beside this one
del _here, Path
