"""The SSH side of a remote target, through asyncssh: connect (host key checked), check, trust a host key.

Keys come from the user's agent and ``~/.ssh`` and the host from ``~/.ssh/config`` (asyncssh reads both);
host keys are checked against ``~/.ssh/known_hosts`` (or the target's own file). An unknown host key is never
accepted: :class:`HostKeyUnknownError` carries its fingerprint so the user can be asked, and :func:`trust`
records it only when the key the host shows still has that fingerprint.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import shlex
import tempfile
from pathlib import Path
from typing import Any

from splitscope.engine.errors import SplitscopeError
from splitscope.engine.remote.target import Target, TargetCheck

CONNECT_TIMEOUT_S = 15.0


class RemoteError(SplitscopeError):
    """A remote target could not be used (unreachable, keys refused, Splitscope missing, connection lost)."""


class HostKeyUnknownError(RemoteError):
    """The host showed a key that is not in the known-hosts file: the user must decide."""

    def __init__(self, target: Target, fingerprint: str, key_type: str) -> None:
        self.target, self.fingerprint, self.key_type = target, fingerprint, key_type
        super().__init__(
            f"{target.label}'s host key ({key_type} {fingerprint}) is not in {known_hosts_path(target)}: check the "
            f"fingerprint with the machine's owner, then trust it (splitscope targets trust {target.label}, or the "
            "Targets dialog)."
        )


class HostKeyChangedError(RemoteError):
    """The host shows another key than the one known for it: possibly an attack; never trusted from here."""

    def __init__(self, target: Target, fingerprint: str, key_type: str) -> None:
        self.target, self.fingerprint, self.key_type = target, fingerprint, key_type
        super().__init__(
            f"{target.label}'s host key has CHANGED (it now shows {key_type} {fingerprint}, not the key "
            f"{known_hosts_path(target)} has for it): someone may be intercepting the connection. If the machine was "
            "reinstalled, check the new key with its owner and remove the old line (ssh-keygen -R HOST)."
        )


def resolved(target: Target) -> tuple[str, int]:
    """The host name and port a connection to ``target`` uses after ~/.ssh/config (HostName, Port, HostKeyAlias):
    the name its host key is known by."""
    a = asyncssh()
    try:
        o = a.SSHClientConnectionOptions(
            host=target.host, port=target.port or (), config=[target.config] if target.config else ()
        )
        return str(o.host_key_alias or o.host), int(o.port or 22)
    except Exception:  # noqa: BLE001 - an unreadable config: the address as written
        return target.host, target.port or 22


def known_name(target: Target) -> str:
    """The target's name as a known-hosts line writes it (``host`` or ``[host]:port``)."""
    host, port = resolved(target)
    return host if port == 22 else f"[{host}]:{port}"


def known_keys(target: Target) -> list[Any]:
    """The keys the known-hosts file has for the target (none: it is unknown)."""
    a = asyncssh()
    path = known_hosts_path(target)
    if not path.is_file():
        return []
    host, port = resolved(target)
    try:
        return list(a.read_known_hosts(str(path)).match(host, "", port)[0])
    except Exception:  # noqa: BLE001 - a damaged file trusts nothing
        return []


def asyncssh() -> Any:
    """The asyncssh module, or a one-line error saying how to install it."""
    try:
        return importlib.import_module("asyncssh")
    except ImportError:
        raise RemoteError("Remote targets need asyncssh: pip install 'splitscope[remote]'.") from None


def known_hosts_path(target: Target) -> Path:
    """The known-hosts file the target's host key is checked against."""
    return Path(target.known_hosts).expanduser() if target.known_hosts else Path.home() / ".ssh" / "known_hosts"


def _options(target: Target) -> dict[str, Any]:
    a = asyncssh()
    kh = known_hosts_path(target)
    # An explicit file, never "no check": a missing file trusts nothing (asyncssh would otherwise skip the check).
    known: Any = str(kh) if kh.is_file() else a.import_known_hosts("")
    # Keepalives end a half-open connection (a dropped VPN, a NAT timeout) within a minute, not TCP's two hours.
    opts: dict[str, Any] = {
        "known_hosts": known,
        "connect_timeout": CONNECT_TIMEOUT_S,
        "keepalive_interval": 15,
        "keepalive_count_max": 3,
    }
    if target.port:
        opts["port"] = target.port
    if target.user:
        opts["username"] = target.user
    if target.client_keys:
        opts["client_keys"] = list(target.client_keys)
        opts["agent_path"] = None
    if target.config:
        opts["config"] = [target.config]
    return opts


async def connect(target: Target) -> Any:
    """An open asyncssh connection to ``target``.

    Raises
    ------
    HostKeyUnknownError
        When the host's key is not known (never accepted silently).
    RemoteError
        When the host cannot be reached or refuses the keys offered, in one line saying what to do.
    """
    a = asyncssh()
    try:
        return await a.connect(target.host, **_options(target))
    except a.HostKeyNotVerifiable:
        key = await _server_key(target)
        if key is None:
            raise RemoteError(f"{target.label}'s host key could not be verified nor read: check the address.") from None
        if known_keys(target):
            raise HostKeyChangedError(target, key.get_fingerprint(), key.get_algorithm()) from None
        raise HostKeyUnknownError(target, key.get_fingerprint(), key.get_algorithm()) from None
    except a.PermissionDenied:
        raise RemoteError(
            f"{target.label} refused the keys offered (the SSH agent's and ~/.ssh's): add your public key to its "
            "~/.ssh/authorized_keys, or load the key into your agent (ssh-add)."
        ) from None
    except (OSError, asyncio.TimeoutError, a.Error) as e:
        why = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
        raise RemoteError(
            f"Could not connect to {target.label} ({why}): check the address, and that its SSH server runs."
        ) from None


async def _server_key(target: Target) -> Any:
    a = asyncssh()
    host, port = resolved(target)
    with contextlib.suppress(OSError, asyncio.TimeoutError, a.Error):
        return await asyncio.wait_for(a.get_server_host_key(host, port), CONNECT_TIMEOUT_S)
    return None


def host_fingerprint(target: Target) -> tuple[str, str] | None:
    """The (algorithm, fingerprint) of the key the host shows now, without trusting it; None if it cannot be read."""
    key = asyncio.run(_server_key(target))
    return None if key is None else (key.get_algorithm(), key.get_fingerprint())


def trust(target: Target, fingerprint: str) -> Path:
    """Add the host's key to the known-hosts file, if it still has ``fingerprint`` (what the user checked).

    Raises
    ------
    RemoteError
        When the host now shows another key (or none): nothing is written.
    """
    if known_keys(target):
        raise RemoteError(
            f"{known_hosts_path(target)} already has a key for {target.label}: a changed host key is not replaced from "
            "here. If the machine was reinstalled, remove the old line (ssh-keygen -R HOST) after checking the new key."
        )
    key = asyncio.run(_server_key(target))
    if key is None or key.get_fingerprint() != fingerprint:
        raise RemoteError(
            f"{target.label} now shows {'no key' if key is None else 'another key (' + key.get_fingerprint() + ')'}, "
            f"not {fingerprint}: nothing was trusted. Check the machine before trying again."
        )
    path = known_hosts_path(target)
    name = known_name(target)
    algorithm, blob = key.export_public_key("openssh").decode().split()[:2]
    line = f"{name} {algorithm} {blob}\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    old = path.read_text(encoding="utf-8") if path.is_file() else ""
    if old and not old.endswith("\n"):
        old += "\n"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".known_hosts-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(old + line)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def remote_cache(target: Target) -> str:
    """A shell expression for the target's cache folder (``~`` expanded by the remote shell)."""
    c = target.cache
    if c == "~" or c.startswith("~/"):
        return '"$HOME"' + (shlex.quote(c[1:]) if len(c) > 1 else "")
    return shlex.quote(c)


async def check(target: Target) -> TargetCheck:
    """Whether Splitscope runs on the target, its version, and the target's GPU (for the Targets dialog)."""
    conn = await connect(target)
    try:
        code = (
            "import json, splitscope, platform; from splitscope.engine.remote.serve import describe; "
            "print(json.dumps(describe()))"
        )
        r = await conn.run(f"{shlex.quote(target.python)} -c {shlex.quote(code)}", check=False)
        if r.exit_status != 0:
            err = str(r.stderr or "").strip().splitlines()
            missing = any("No module named" in ln for ln in err) or r.exit_status == 127
            hint = (
                f"Splitscope is not installed for {target.python} on {target.label}: run there "
                f"\"{target.python} -m pip install 'splitscope[gpu]'\" (or set the target's Python)."
                if missing
                else f"{target.python} on {target.label} failed: " + (err[-1][:160] if err else f"exit {r.exit_status}")
            )
            return TargetCheck(False, hint)
        import json

        return TargetCheck.found(json.loads(str(r.stdout).strip().splitlines()[-1]))
    finally:
        conn.close()
        with contextlib.suppress(Exception):
            await conn.wait_closed()
