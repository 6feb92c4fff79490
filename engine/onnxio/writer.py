"""The one way Splitscope writes a model: the ``.onnx`` and its external-data sidecar staged together, moved
into place together.

A model is written into a hidden staging folder beside its target (``.<out>.<host>.<pid>-<n>.staging/``), under the
target's own name, with its weights (when they are external) in ``<out>.data`` beside it: the staged pair is
already a valid model, so checks and accuracy runs read it there. :meth:`ModelWriter.commit` moves the
sidecar, then the model, onto the target's names and removes a sidecar the previous model had and the new one
has not. Anything that goes wrong before the commit (an exception, Cancel, a ``KeyboardInterrupt``) removes
the staging folder: the target keeps the old pair, never a mix or an orphan. Both files are flushed to disk
before the renames, and an advisory lock on the target's folder keeps two processes writing the same target
from interleaving their renames. The renames are two: a machine that loses power between them keeps the new
sidecar with the old model (no in-process failure can). A staging folder left by a process of this host that
was killed is removed by the next writer of the same target.

The weights stay external in every output when the source model kept them external, and always above
:data:`EXTERNAL_ABOVE` (protobuf cannot hold 2 GB).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

import onnx

EXTERNAL_ABOVE = 1_900_000_000
"""A written model larger than this keeps its weights in an external data file (protobuf's limit is 2 GB)."""
_SERIAL = itertools.count()
_HOST = "".join(c if c.isalnum() or c in "-_" else "_" for c in socket.gethostname())[:40] or "host"


def sidecar_name(out: str | os.PathLike[str]) -> str:
    """The external-data file's name for a model written to ``out``: ``<out>.data``."""
    return f"{Path(out).name}.data"


def external_locations(path: str | os.PathLike[str]) -> set[str]:
    """The external-data files a model file names (read without its weights); empty when it has none or
    cannot be read."""
    try:
        m = onnx.load(str(path), load_external_data=False)
    except Exception:  # noqa: BLE001 - a file that is not a model names no sidecar
        return set()
    return locations_in(m)


def locations_in(m: onnx.ModelProto) -> set[str]:
    """The external-data files a model read without its weights names (bodies' and Constants' tensors too)."""
    found: set[str] = set()
    for t in _tensors(m.graph):
        if t.data_location == onnx.TensorProto.EXTERNAL:
            for e in t.external_data:
                if e.key == "location":
                    found.add(e.value)
    return found


def has_external_data(path: str | os.PathLike[str]) -> bool:
    """Whether the model at ``path`` keeps any weight in an external-data file."""
    return bool(external_locations(path))


def _tensors(g: onnx.GraphProto) -> Iterator[onnx.TensorProto]:
    yield from g.initializer
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                yield a.t
            elif a.type == onnx.AttributeProto.GRAPH:
                yield from _tensors(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for sub in a.graphs:
                    yield from _tensors(sub)


def _umask_mode() -> int:
    from splitscope.engine.paths import file_mode

    return file_mode()


def _fsync(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def _target_lock(out: Path) -> Iterator[None]:
    """One commit at a time in the target's folder, across processes (a CLI run and the window writing the same
    --out): an advisory lock on the folder itself, so no lock file is left beside the user's files."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock, the renames alone
        yield
        return
    try:
        fd = os.open(out.parent, os.O_RDONLY)
    except OSError:
        yield
        return
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ModelWriter:
    """Stage a model for ``out`` and move it into place on :meth:`commit` (a context manager).

    Parameters
    ----------
    out
        Where the model goes; its folder must exist.
    external
        Keep the weights in ``<out>.data``: ``True`` always (the source had external data), ``None`` only
        above :data:`EXTERNAL_ABOVE`.
    """

    def __init__(self, out: str | os.PathLike[str], *, external: bool | None = None) -> None:
        self.out = Path(os.path.abspath(out))  # a relative path would move with a child's working folder
        self.external = external
        self.stage = self.out.parent / f".{self.out.name}.{_HOST}.{os.getpid()}-{next(_SERIAL)}.staging"
        self.path = self.stage / self.out.name
        """The staged model file: read it (checks, accuracy) before the commit."""
        self.committed = False

    def __enter__(self) -> ModelWriter:
        self._remove_stale()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.discard()

    def _remove_stale(self) -> None:
        """Staging folders of this target left by processes of this host that no longer run (a killed job); a
        stage of another host (a shared folder) is never judged from here."""
        prefix = f".{self.out.name}.{_HOST}."
        with contextlib.suppress(OSError):
            for p in self.out.parent.iterdir():
                if not (p.name.startswith(prefix) and p.name.endswith(".staging") and p.is_dir()):
                    continue
                pid = p.name[len(prefix) : -len(".staging")].split("-")[0]
                if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                    shutil.rmtree(p, ignore_errors=True)

    def save(self, m: onnx.ModelProto) -> Path:
        """Write ``m`` into the staging folder (again, if it was written before); returns the staged path.

        When the weights go external, onnx moves them out of ``m``: ``m`` is spent then."""
        self.stage.mkdir(exist_ok=True)  # made at the first write: a job killed before it leaves nothing
        data = self.stage / sidecar_name(self.out)
        data.unlink(missing_ok=True)  # onnx >= 1.23 refuses to write over it; older ones append to it
        big = m.ByteSize() > EXTERNAL_ABOVE
        if self.external or big:
            onnx.save(
                m,
                str(self.path),
                save_as_external_data=True,
                all_tensors_to_one_file=True,
                location=sidecar_name(self.out),
                size_threshold=1024,
            )
        else:
            onnx.save(m, str(self.path))
        return self.path

    def commit(self) -> Path:
        """Move the staged pair onto ``out``; a sidecar the old model had and the new one lacks is removed."""
        if not self.path.exists():
            raise FileNotFoundError(f"nothing was staged for {self.out}")
        new_data = self.stage / sidecar_name(self.out)
        final_data = self.out.parent / sidecar_name(self.out)
        has_data = new_data.exists()
        mode = _umask_mode()
        for f in (new_data, self.path):
            if f.exists():
                _fsync(f)
        with _target_lock(self.out), _signals_held():  # another writer and Cancel's SIGTERM wait the renames out
            old_refs = external_locations(self.out) if self.out.exists() else set()
            if has_data:
                os.chmod(new_data, mode)
                os.replace(new_data, final_data)
            os.chmod(self.path, mode)
            os.replace(self.path, self.out)
            if not has_data and final_data.name in old_refs:
                final_data.unlink(missing_ok=True)
            _fsync(self.out.parent)
        self.committed = True
        self.discard()
        return self.out

    def discard(self) -> None:
        """Remove the staging folder (all that was staged and not committed)."""
        shutil.rmtree(self.stage, ignore_errors=True)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGTERM and SIGINT for a few renames (main thread only; elsewhere Python delivers none)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    held = {signal.SIGTERM, signal.SIGINT}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def write_model(m: onnx.ModelProto, out: str | os.PathLike[str], *, external: bool | None = None) -> Path:
    """Write ``m`` to ``out`` (and its sidecar) in one step, through a :class:`ModelWriter`."""
    with ModelWriter(out, external=external) as w:
        w.save(m)
        return w.commit()
