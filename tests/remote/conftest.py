"""The throwaway SSH server the remote tests run against (tests/remote/sshd.py)."""

from __future__ import annotations

import pytest

from tests.remote import sshd


@pytest.fixture(scope="session")
def ssh_server(tmp_path_factory):
    if sshd.SSHD is None:
        pytest.skip("OpenSSH's server (sshd) is not installed: packaging/system-deps.sh installs it (openssh-server)")
    pytest.importorskip("asyncssh", reason="asyncssh is not installed: pip install 'splitscope[remote]'")
    server = sshd.start(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


@pytest.fixture
def trusted(ssh_server):
    ssh_server.trust()
    yield ssh_server
