"""Where a job runs: this machine, or an SSH host (``ssh://user@host[:port]`` or an alias of ``~/.ssh/config``).

A target holds no secret: keys come from the user's agent and ``~/.ssh`` (asyncssh reads ``~/.ssh/config``),
host keys are checked against ``~/.ssh/known_hosts``. What it does hold: which Python runs Splitscope there
and the folder on the target where models and samples are kept, keyed by content.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from splitscope.engine.errors import SplitscopeError

LOCAL = "local"
DEFAULT_CACHE = "~/.cache/splitscope/remote"
_QUERY = {"python": "python", "cache": "cache", "key": "client_keys", "known_hosts": "known_hosts", "config": "config"}
"""The options an address may carry (``ssh://gpu-box?python=/opt/venv/bin/python``), to the target's fields."""
_HOST = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$")
_USER = re.compile(r"^[A-Za-z0-9._][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True, slots=True)
class Target:
    """This machine (``host == ""``) or an SSH host."""

    host: str = ""
    user: str | None = None
    port: int | None = None
    python: str = "python3"
    """The Python that has Splitscope on the target (a virtual environment's, often)."""
    cache: str = DEFAULT_CACHE
    """The folder on the target for pushed models and samples, and the jobs' files."""
    known_hosts: str | None = None
    """A known-hosts file instead of ``~/.ssh/known_hosts`` (tests, a team's shared file)."""
    client_keys: tuple[str, ...] | None = None
    """Private key files instead of the agent's and ``~/.ssh``'s."""
    config: str | None = None
    """An SSH config file instead of ``~/.ssh/config``."""

    @property
    def local(self) -> bool:
        """Whether jobs run on this machine."""
        return not self.host

    @property
    def label(self) -> str:
        """``local``, ``ssh://user@host:port`` or the alias, as the user wrote it."""
        if self.local:
            return LOCAL
        if self.user is None and self.port is None:
            return self.host
        return f"ssh://{self.user + '@' if self.user else ''}{self.host}{':' + str(self.port) if self.port else ''}"

    def address(self) -> str:
        """The target as one string that :func:`parse_target` reads back whole (its options in the query)."""
        if self.local:
            return LOCAL
        from urllib.parse import quote

        q = [("python", self.python, "python3"), ("cache", self.cache, DEFAULT_CACHE)]
        q += [("key", self.client_keys[0] if self.client_keys else None, None)]
        q += [("known_hosts", self.known_hosts, None), ("config", self.config, None)]
        query = "&".join(f"{k}={quote(str(v), safe='/~.-_')}" for k, v, default in q if v and v != default)
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port else ""
        return f"ssh://{user}{self.host}{port}" + (f"?{query}" if query else "")

    def to_json(self) -> dict[str, Any]:
        """The target as saved (settings, sweep cells, a remote result's ``target``)."""
        d = asdict(self)
        d["client_keys"] = list(self.client_keys) if self.client_keys else None
        d["label"] = self.label
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Target:
        """A target saved by :meth:`to_json`."""
        keys = d.get("client_keys")
        return cls(
            host=str(d.get("host") or ""),
            user=d.get("user") or None,
            port=int(d["port"]) if d.get("port") else None,
            python=str(d.get("python") or "python3"),
            cache=str(d.get("cache") or DEFAULT_CACHE),
            known_hosts=d.get("known_hosts") or None,
            client_keys=tuple(keys) if keys else None,
            config=d.get("config") or None,
        )


def parse_target(text: str, **options: Any) -> Target:
    """``local``, ``ssh://[user@]host[:port][?python=PATH&cache=DIR&key=FILE&known_hosts=FILE&config=FILE]`` or a
    host alias of ``~/.ssh/config``; ``options`` set the rest.

    Raises
    ------
    SplitscopeError
        For anything else, in one line that shows the accepted forms.
    """
    text = text.strip()
    if text in ("", LOCAL, "localhost-here"):
        return Target()
    how = "use 'local', 'ssh://user@host[:port]' or a host alias of ~/.ssh/config"
    if "://" in text:
        u = urlsplit(text)
        if u.scheme != "ssh" or not u.hostname or u.path not in ("", "/"):
            raise SplitscopeError(f"Target {text!r} is not an SSH address: {how}.")
        try:
            port = u.port
        except ValueError:
            raise SplitscopeError(f"Target {text!r} has a port that is not a number from 1 to 65535: {how}.") from None
        query = {k: v[-1] for k, v in parse_qs(u.query).items()}
        unknown = set(query) - set(_QUERY)
        if unknown:
            raise SplitscopeError(
                f"Target {text!r}: unknown option {sorted(unknown)[0]!r} (known: {', '.join(k + '=' for k in _QUERY)})."
            )
        host, user = u.hostname, u.username
        given: dict[str, Any] = {_QUERY[k]: query[k] for k in _QUERY if k in query}
        if "client_keys" in given:
            given["client_keys"] = (given["client_keys"],)
        options = {**given, **options}
    else:
        host, user, port = text, None, None
    if not _HOST.match(host) or (user is not None and not _USER.match(user)):
        raise SplitscopeError(f"Target {text!r} is not a host name: {how}.")
    return Target(host=host, user=user, port=port, **options)


TARGET_HELP = (
    "where the job runs: local (default), ssh://user@host[:port][?python=PATH] or a host alias of ~/.ssh/config "
    "(Splitscope installed there; keys from your agent and ~/.ssh, the host key checked against known_hosts)"
)


def target_of(args: Any) -> Target | None:
    """The SSH target ``--target`` names, or None to run here."""
    text = getattr(args, "target", None)
    if not text:
        return None
    t = parse_target(text)
    return None if t.local else t


@dataclass(frozen=True, slots=True)
class TargetCheck:
    """What checking a target found: Splitscope's version there, its host, Python and GPUs; or why not, with the
    host key to compare when the machine is not known yet."""

    ok: bool
    message: str = ""
    version: str = ""
    host: str = ""
    python: str = ""
    gpus: tuple[str, ...] = ()
    unknown_key: bool = False
    algorithm: str = ""
    fingerprint: str = ""

    @property
    def summary(self) -> str:
        """``Splitscope 0.9 (Python 3.11.7) on host, NVIDIA H100`` (a check that passed)."""
        return f"Splitscope {self.version} (Python {self.python}) on {self.host}, {self.gpus_text}"

    @property
    def gpus_text(self) -> str:
        return ", ".join(self.gpus) or "no GPU"

    @classmethod
    def found(cls, info: dict[str, Any]) -> TargetCheck:
        """A target that answered: its :func:`splitscope.engine.remote.serve.describe`."""
        return cls(
            True,
            version=str(info.get("version", "")),
            host=str(info.get("host", "")),
            python=str(info.get("python", "")),
            gpus=tuple(str(g) for g in info.get("gpus") or ()),
        )
