"""A job on a remote target: the same child and JSON-line events as a local job, over SSH.

:class:`RemoteJob` connects (the host key checked), pushes the job's input files into the target's cache folder
once, keyed by content hash (a model pushed before is not sent again), writes the job's arguments there, and runs
``python -m splitscope.engine.remote.serve`` (:mod:`splitscope.engine.remote.serve`), whose stdout carries the
child's events. :meth:`RemoteJob.events` relays them like :class:`splitscope.engine.process.JobProcess`; output
files are fetched into a temporary file beside their local path and renamed into place only when the job has
succeeded. Cancel tells the serving side to stop the child's whole process group; a dropped connection ends the
job with a message (the serving side, reading the end of its stdin, stops the child there too) and nothing is
written locally.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import queue
import shlex
import shutil
import tempfile
import threading
import uuid
from collections.abc import Generator
from pathlib import Path
from typing import Any

from splitscope.engine.errors import JobCancelledError, SplitscopeError
from splitscope.engine.jobs import CancelToken, JobEvent, LogLine, Progress
from splitscope.engine.process import JobCrashedError, decode_line, relay
from splitscope.engine.remote.ssh import RemoteError, asyncssh, connect, remote_cache
from splitscope.engine.remote.target import Target

_CHUNK = 1 << 20


def content_hash(path: Path) -> str:
    """SHA-256 of a file, or of a folder's files (names and contents, in order)."""
    h = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for f in files:
        if path.is_dir():
            h.update(str(f.relative_to(path)).encode() + b"\0")
        with open(f, "rb") as fh:
            while chunk := fh.read(_CHUNK):
                h.update(chunk)
    return h.hexdigest()


def _remove(path: Path) -> None:
    """Remove a file or a folder, if there."""
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _local_paths(value: Any, paths: dict[str, str]) -> Any:
    """``value`` with the target's paths of the job's files replaced by the user's."""
    if isinstance(value, str):
        for remote, local in paths.items():
            if remote in value:
                value = value.replace(remote, local)
        return value
    if isinstance(value, dict):
        return {k: _local_paths(v, paths) for k, v in value.items()}
    if isinstance(value, list):
        return [_local_paths(v, paths) for v in value]
    return value


class RemoteJob:
    """A job of ``kind`` (a :mod:`splitscope.engine.child` kind) run on ``target``.

    ``push`` names the arguments that hold local input paths (files or folders): they are sent once and the
    arguments point at the target's copies. ``fetch`` names the arguments that are output paths: the job writes
    them on the target, and they are brought back to the local path when it succeeds.
    """

    def __init__(
        self, target: Target, kind: str, args: dict[str, Any], push: tuple[str, ...] = (), fetch: tuple[str, ...] = ()
    ) -> None:
        if target.local:
            raise SplitscopeError("RemoteJob needs an SSH target; local jobs run in a JobProcess.")
        self.target, self.kind = target, kind
        self.args = dict(args)
        self._push, self._fetch = push, fetch
        self._lines: queue.Queue[tuple[str, Any] | None] = queue.Queue()
        self._loop = asyncio.new_event_loop()
        self._proc: Any = None
        self._conn: Any = None
        self._task: Any = None
        self._cancelled = threading.Event()
        self._paths: dict[str, str] = {}
        """The target's paths of pushed and fetched files, to the user's (results name the user's files)."""
        self.pushed: dict[str, bool] = {}
        """Per pushed argument, whether it was sent now (False: the target had it from before)."""
        self._thread = threading.Thread(target=self._run, daemon=True, name="remote-job")
        self._thread.start()

    # ---------------------------------------------------------------- the loop's side
    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._task = self._loop.create_task(self._main())
            self._loop.run_until_complete(self._task)
        except asyncio.CancelledError:  # Cancel before the job started there (connecting, sending)
            self._lines.put(("cancelled", None))
        except SplitscopeError as e:
            self._lines.put(("raise", e))
        except Exception as e:  # noqa: BLE001 - asyncssh's and the OS's errors reach the user as one line
            if self._cancelled.is_set():
                self._lines.put(("cancelled", None))
            else:
                why = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
                self._lines.put(
                    (
                        "raise",
                        RemoteError(
                            f"The connection to {self.target.label} dropped midway ({why}): the job there was "
                            "stopped and nothing was written here; run it again."
                        ),
                    )
                )
        finally:
            self._lines.put(None)
            with contextlib.suppress(Exception):
                self._loop.close()

    async def _main(self) -> None:
        a = asyncssh()
        self._lines.put(("event", Progress("remote", 0, 0, f"Connecting to {self.target.label}")))
        conn = self._conn = await connect(self.target)
        try:
            cache = await self._cache_folder(conn)
            async with conn.start_sftp_client() as sftp:
                outputs = await self._stage(sftp, cache)
                job_file = f"{cache}/job-{uuid.uuid4().hex}.json"
                async with sftp.open(job_file, "w") as f:
                    await f.write(json.dumps({"kind": self.kind, "args": self.args}))
                if self._cancelled.is_set():
                    await sftp.remove(job_file)
                    raise JobCancelledError()
                status, result_seen, succeeded, stderr = await self._follow(conn, job_file)
                # A result is the job's word (as for a local child): its files are fetched even if the process then
                # ended badly (a crash in a driver's teardown) or the channel closed after it.
                if self._cancelled.is_set() or not succeeded:
                    for folder, _ in outputs.values():
                        with contextlib.suppress(Exception):
                            await sftp.rmtree(folder)
                if self._cancelled.is_set():
                    self._lines.put(("cancelled", None))
                    return
                if status is None and not result_seen:
                    raise a.ConnectionLost("the channel closed without an exit status")
                if not result_seen:
                    self._no_result(status, stderr)
                    return
                if succeeded:
                    await self._fetch_outputs(sftp, outputs)
        finally:
            conn.close()
            with contextlib.suppress(Exception):
                await conn.wait_closed()

    async def _cache_folder(self, conn: Any) -> str:
        """The target's cache folder, made where missing, as an absolute path."""
        where = remote_cache(self.target)
        r = await conn.run(f"mkdir -p {where} && cd {where} && pwd", check=False)
        if r.exit_status != 0:
            raise RemoteError(
                f"Could not make the cache folder {self.target.cache} on {self.target.label}: "
                + (str(r.stderr).strip().splitlines() or ["?"])[-1][:160]
            )
        return str(r.stdout).strip().splitlines()[-1]

    async def _stage(self, sftp: Any, cache: str) -> dict[str, tuple[str, Path]]:
        """Send the job's input files (their arguments then name the target's copies) and give each output file a
        folder of its own there: {argument: (the target's folder, the local path)}."""
        for key in self._push:
            if self.args.get(key):
                self.args[key] = await self._send(sftp, cache, Path(self.args[key]), key)
        outputs: dict[str, tuple[str, Path]] = {}
        for key in self._fetch:
            if self.args.get(key):
                local = Path(self.args[key])
                # A folder of its own, the file named as the user's: a sidecar of external data keeps the
                # name the model refers to it by.
                folder = f"{cache}/out-{uuid.uuid4().hex}"
                await sftp.makedirs(folder, exist_ok=True)
                outputs[key] = (folder, local)
                self._paths[f"{folder}/{local.name}"] = str(local)
                self.args[key] = f"{folder}/{local.name}"
        return outputs

    async def _follow(self, conn: Any, job_file: str) -> tuple[int | None, bool, bool, list[str]]:
        """Run the job there and relay its lines: (exit status, whether a result or an error came, whether a
        result did, the last lines of its stderr)."""
        command = f"{shlex.quote(self.target.python)} -m splitscope.engine.remote.serve {shlex.quote(job_file)}"
        self._lines.put(("event", Progress("remote", 0, 0, f"Running on {self.target.label}")))
        proc = await conn.create_process(command, encoding="utf-8")
        self._proc = proc
        if self._cancelled.is_set():  # Cancel came while the process was being started
            with contextlib.suppress(Exception):
                proc.stdin.write("cancel\n")
                proc.stdin.write_eof()
        stderr: list[str] = []

        async def drain() -> None:
            async for line in proc.stderr:
                stderr.append(line)
                del stderr[:-50]

        drainer = asyncio.ensure_future(drain())
        result_seen = succeeded = False
        async for line in proc.stdout:
            kind, value = decode_line(line)
            if kind:
                self._lines.put((kind, value))
                result_seen = result_seen or kind in ("result", "error")
                succeeded = succeeded or kind == "result"
        done = await proc.wait(check=False)
        await drainer
        return done.exit_status, result_seen, succeeded, stderr

    def _no_result(self, status: int | None, stderr: list[str]) -> None:
        """The process there ended without a result: Splitscope missing there, or its exit and last line."""
        tail = [ln.strip() for ln in stderr if ln.strip()]
        if any("No module named" in ln for ln in tail) or status == 127:
            raise RemoteError(
                f"Splitscope is not installed for {self.target.python} on {self.target.label}: run there "
                f"\"{self.target.python} -m pip install 'splitscope[gpu]'\" (or set the target's Python)."
            )
        self._lines.put(("exit", (status, tail[-1][:200] if tail else "")))

    async def _send(self, sftp: Any, cache: str, local: Path, key: str) -> str:
        """The target's copy of ``local`` (sent now unless the same content is there)."""
        if not local.exists():
            raise SplitscopeError(f"{local} does not exist: nothing to send to {self.target.label}.")
        try:
            digest = content_hash(local)
        except OSError as e:
            raise SplitscopeError(
                f"Could not read {local} to send it to {self.target.label}: {e.strerror or e}."
            ) from None
        folder = f"{cache}/{digest[:24]}"
        remote = f"{folder}/{local.name}"  # keyed by content, named as the user's file (messages, reports)
        self._paths[remote] = str(local)
        if await sftp.exists(remote):
            self.pushed[key] = False
            return remote
        self._lines.put(("event", Progress("remote", 0, 0, f"Sending {local.name} to {self.target.label}")))
        await sftp.makedirs(folder, exist_ok=True)
        part = f"{folder}/.{local.name}.part-{uuid.uuid4().hex[:8]}"
        try:
            await sftp.put(str(local), part, recurse=local.is_dir())
            with contextlib.suppress(Exception):  # another job sent the same file meanwhile: keep theirs
                await sftp.rename(part, remote)
        finally:
            with contextlib.suppress(Exception):
                if await sftp.exists(part):
                    await (sftp.rmtree(part) if local.is_dir() else sftp.remove(part))
        if not await sftp.exists(remote):
            raise RemoteError(f"{local.name} could not be stored in {cache} on {self.target.label}.")
        self.pushed[key] = True
        return remote

    async def _fetch_outputs(self, sftp: Any, outputs: dict[str, tuple[str, Path]]) -> None:
        """Every output file downloaded beside its local path first, then all renamed into place: a model and its
        external-data sidecar arrive together or not at all."""
        staged: list[tuple[Path, Path]] = []
        try:
            for folder, local in outputs.values():
                self._lines.put(("event", Progress("remote", 0, 0, f"Fetching {local.name}")))
                local.parent.mkdir(parents=True, exist_ok=True)
                for name in await sftp.listdir(folder):
                    if name in (".", ".."):
                        continue
                    if await sftp.isdir(f"{folder}/{name}"):  # a folder the job wrote (a plugin project)
                        tmp = Path(tempfile.mkdtemp(dir=local.parent, prefix=f".{name}.", suffix=".part"))
                        staged.append((tmp, local.parent / name))
                        await sftp.get(f"{folder}/{name}", str(tmp / name), recurse=True)
                        continue
                    fd, tmp_name = tempfile.mkstemp(dir=local.parent, prefix=f".{name}.", suffix=".part")
                    os.close(fd)
                    staged.append((Path(tmp_name), local.parent / name))
                    await sftp.get(f"{folder}/{name}", tmp_name)
        except OSError as e:
            for tmp, _ in staged:
                _remove(tmp)
            where = e.filename if getattr(e, "filename", None) else "the output folder"
            raise RemoteError(
                f"The job on {self.target.label} finished, but its files could not be brought back ({e.strerror or e}:"
                f" {where}); nothing was written here. Free space or choose another --out, and run it again."
            ) from None
        except BaseException:
            for tmp, _ in staged:
                _remove(tmp)
            raise
        for tmp, final in staged:
            if tmp.is_dir():  # a folder replaces the user's folder of that name whole
                old = final.with_name(f".{final.name}.old-{uuid.uuid4().hex[:8]}")
                if final.exists():
                    os.replace(final, old)
                os.replace(tmp / final.name, final)
                _remove(tmp)
                _remove(old)
            else:
                os.replace(tmp, final)
        for folder, _ in outputs.values():
            with contextlib.suppress(Exception):
                await sftp.rmtree(folder)

    # ---------------------------------------------------------------- the caller's side
    def kill(self) -> None:
        """Stop the job on the target (its whole process group there), then close the connection."""
        self._cancelled.set()

        def stop() -> None:
            if self._proc is not None:
                with contextlib.suppress(Exception):
                    self._proc.stdin.write("cancel\n")
                    self._proc.stdin.write_eof()
            elif self._task is not None:
                self._task.cancel()  # still connecting or sending: nothing runs there yet

        with contextlib.suppress(RuntimeError):  # the loop has ended already
            self._loop.call_soon_threadsafe(stop)

    def events(self, cancel: CancelToken | None = None) -> Generator[JobEvent, None, dict[str, Any]]:
        """Relay the remote child's events; return its result with the target named, or raise its error."""

        def stop() -> None:
            if not self._cancelled.is_set():
                self.kill()

        try:
            last = yield from relay(self._lines, cancel, stop)
            if "raise" in last:
                raise last["raise"]
            if "cancelled" in last:
                raise JobCancelledError()
        except BaseException:
            self.kill()
            raise
        result, error, exit_info = last.get("result"), last.get("error"), last.get("exit")
        if self._cancelled.is_set():
            raise JobCancelledError()
        if error is not None:
            raise SplitscopeError(error)
        if result is None:
            status, tail = exit_info or (None, "")
            raise JobCrashedError(
                f"The job on {self.target.label} ended without a result (exit status {status})"
                f"{': ' + tail if tail else ''}; the app is fine: try again, or another backend."
            )
        result = _local_paths(result, self._paths)
        if isinstance(result, dict):
            result = {**result, "target": self.target.label}
        yield LogLine(f"finished on {self.target.label}")
        return result  # type: ignore[no-any-return]
