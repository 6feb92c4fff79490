"""Probe optional dependencies without importing them at module level.

``find_spec`` tells whether a package is installed without importing it; a
guarded import then tells whether it works. Results carry the pip command that
fixes a missing dependency, for the GUI badges and CLI messages.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
from dataclasses import dataclass
from enum import Enum


class DepState(str, Enum):
    """State of one optional dependency."""

    READY = "ready"
    NOT_INSTALLED = "not installed"
    IMPORT_FAILED = "import failed"
    NO_DEVICE = "no device"


@dataclass(frozen=True, slots=True)
class DepStatus:
    """What the probe found for one dependency."""

    name: str
    module: str
    state: DepState
    version: str = ""
    error: str = ""
    fix: str = ""

    @property
    def ready(self) -> bool:
        """Whether the dependency can be used."""
        return self.state is DepState.READY


# name -> (module, pip command that installs it)
KNOWN: dict[str, tuple[str, str]] = {
    "tensorrt": ("tensorrt", "pip install 'splitscope[tensorrt]'"),
    "tensorrt-rtx": ("tensorrt_rtx", "pip install 'splitscope[rtx]'"),
    "cuda": ("cuda.bindings.runtime", "pip install 'splitscope[gpu]'"),
    "nvml": ("pynvml", "pip install 'splitscope[gpu]'"),
    "onnxruntime": ("onnxruntime", "pip install onnxruntime"),
    "ort-cuda": ("onnxruntime", "pip install onnxruntime-gpu (on a machine with an NVIDIA GPU)"),
    "netron": ("netron", "pip install 'splitscope[netron]'"),
    "pdf": ("weasyprint", "pip install 'splitscope[pdf]'"),
}


FOUND_IS_ENOUGH = frozenset({"netron", "pdf"})
"""Dependencies a probe only finds, never imports: importing WeasyPrint takes most of a second of the GIL,
which the window's first paint would wait for; they are imported when first used, and say so then."""

DISTRIBUTIONS = {"netron": "netron", "pdf": "weasyprint"}


def installed(module: str) -> bool:
    """Whether ``module`` can be found, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def probe(name: str, *, import_it: bool = True) -> DepStatus:
    """Probe one dependency from :data:`KNOWN`.

    Parameters
    ----------
    name
        A key of :data:`KNOWN`.
    import_it
        Also import the module to prove it works (slow for TensorRT: do it in a worker).
    """
    module, fix = KNOWN[name]
    top = module.split(".")[0]
    if not installed(top):
        return DepStatus(name, module, DepState.NOT_INSTALLED, fix=fix)
    if not import_it or name in FOUND_IS_ENOUGH:
        version = ""
        if name in DISTRIBUTIONS:
            from importlib import metadata

            with contextlib.suppress(metadata.PackageNotFoundError):
                version = metadata.version(DISTRIBUTIONS[name])
        return DepStatus(name, module, DepState.READY, version)
    try:
        mod = importlib.import_module(module)
    except Exception as e:  # noqa: BLE001 - any import failure is reported, not raised
        return DepStatus(name, module, DepState.IMPORT_FAILED, error=f"{type(e).__name__}: {e}", fix=fix)
    version = str(getattr(mod, "__version__", "") or getattr(importlib.import_module(top), "__version__", ""))
    if name == "cuda":
        err, count = mod.cudaGetDeviceCount()
        if int(err) != 0 or count == 0:
            return DepStatus(
                name,
                module,
                DepState.NO_DEVICE,
                version,
                f"cudaGetDeviceCount: {err}",
                "run on a machine with an NVIDIA GPU and driver",
            )
    if name == "ort-cuda":
        with contextlib.suppress(Exception):  # CUDA libraries that are not there show as no provider
            if hasattr(mod, "preload_dlls"):
                mod.preload_dlls()
        if "CUDAExecutionProvider" not in mod.get_available_providers():
            return DepStatus(name, module, DepState.NO_DEVICE, version, "no CUDAExecutionProvider", fix)
    if name == "nvml":
        try:
            mod.nvmlInit()
            mod.nvmlShutdown()
        except Exception as e:  # noqa: BLE001 - NVMLError_LibraryNotFound, DriverNotLoaded, ...
            return DepStatus(
                name,
                module,
                DepState.NO_DEVICE,
                version,
                f"{type(e).__name__}: {e}",
                "install an NVIDIA driver on a machine with an NVIDIA GPU",
            )
    return DepStatus(name, module, DepState.READY, version)


def probe_all(*, import_it: bool = True) -> dict[str, DepStatus]:
    """Probe every known optional dependency."""
    return {name: probe(name, import_it=import_it) for name in KNOWN}
