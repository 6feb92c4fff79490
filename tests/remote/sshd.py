"""A throwaway OpenSSH server on 127.0.0.1 for the remote-target tests (nothing beyond the loopback).

Its host key, the client's key, the authorized-keys and known-hosts files and the SSH config all live in a
temporary folder; sessions get that folder's XDG directories (``SetEnv``), so a job run "remotely" never
touches the user's real ones either. ``.ci/run`` installs OpenSSH's server (packaging/system-deps.sh).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests import child_kinds

SSHD = shutil.which("sshd") or next((p for p in ("/usr/sbin/sshd", "/usr/local/sbin/sshd") if Path(p).exists()), None)


@dataclass
class Server:
    port: int
    folder: Path
    key: Path
    known_hosts: Path
    config: Path
    proc: subprocess.Popen[bytes]

    def target(self, **kw):  # type: ignore[no-untyped-def]
        from splitscope.engine.remote.target import Target

        opts = {
            "host": "127.0.0.1",
            "port": self.port,
            "user": os.environ.get("USER") or __import__("getpass").getuser(),
            "python": sys.executable,
            "cache": str(self.folder / "target-cache"),
            "known_hosts": str(self.known_hosts),
            "client_keys": (str(self.key),),
            "config": str(self.config),
        }
        opts.update(kw)
        return Target(**opts)

    def trust(self) -> None:
        """Write the server's host key into the known-hosts file (what the user does after checking it)."""
        pub = (self.folder / "host_ed25519.pub").read_text().split()
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {pub[0]} {pub[1]}\n")

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(folder: Path) -> Server:
    """Start sshd in ``folder``; the known-hosts file starts empty (the host is unknown until trusted)."""
    assert SSHD is not None
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    for name in ("host_ed25519", "client_ed25519"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / name)], check=True)
    auth = folder / "authorized_keys"
    auth.write_text((folder / "client_ed25519.pub").read_text())
    os.chmod(auth, 0o600)
    xdg = {v: folder / "remote-home" / v.lower() for v in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME")}
    for d in xdg.values():
        d.mkdir(parents=True, exist_ok=True)
    env = {**xdg, "SPLITSCOPE_JOB_KINDS": child_kinds.entries()}  # the tests' own job kinds run there too
    port = _free_port()
    cfg = folder / "sshd_config"
    cfg.write_text(
        "\n".join(
            [
                f"Port {port}",
                "ListenAddress 127.0.0.1",
                f"HostKey {folder / 'host_ed25519'}",
                f"AuthorizedKeysFile {auth}",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "PubkeyAuthentication yes",
                "PermitRootLogin prohibit-password",
                "UsePAM no",
                "StrictModes no",
                f"PidFile {folder / 'sshd.pid'}",
                "Subsystem sftp internal-sftp",
                "SetEnv " + " ".join(f"{k}={v}" for k, v in env.items()),
                "",
            ]
        )
    )
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # the privilege-separation folder sshd requires
    with open(folder / "sshd.log", "wb") as log:  # the server keeps its own descriptor
        proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(cfg)], stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            break
        if proc.poll() is not None:
            raise RuntimeError("sshd did not start: " + (folder / "sshd.log").read_text()[-500:])
        time.sleep(0.05)
    known = folder / "known_hosts"
    known.write_text("")
    config = folder / "ssh_config"
    config.write_text("")
    return Server(port, folder, folder / "client_ed25519", known, config, proc)
