"""Jobs on an SSH target: a real OpenSSH server on 127.0.0.1 (tests/remote/sshd.py), the real CLI and child jobs.

The target's Python is this one, its cache folder and XDG folders temporary; the host key is unknown until a
test trusts it."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from splitscope.engine.cli import main as cli
from splitscope.engine.errors import JobCancelledError, SplitscopeError
from splitscope.engine.jobs import CancelToken, Progress
from splitscope.engine.remote.job import RemoteJob
from splitscope.engine.remote.ssh import HostKeyUnknownError, RemoteError
from splitscope.engine.remote.target import Target, parse_target

DATA = Path(__file__).resolve().parents[1] / "data"
MODEL = DATA / "torch_transformer.onnx"


def _url(server, **extra) -> str:  # type: ignore[no-untyped-def]
    t = server.target()
    q = f"python={t.python}&cache={t.cache}&key={server.key}&known_hosts={server.known_hosts}&config={server.config}"
    q += "".join(f"&{k}={v}" for k, v in extra.items())
    return f"ssh://{t.user}@127.0.0.1:{server.port}?{q}"


def _children(marker: str) -> list[str]:
    """Command lines of the job processes whose arguments hold ``marker`` (the target's cache folder)."""
    out = subprocess.run(["ps", "-eww", "-o", "args"], capture_output=True, text=True, check=True).stdout
    return [ln for ln in out.splitlines() if marker in ln and "splitscope.engine" in ln]


def test_targets_parse_and_refuse_what_is_not_an_address():
    assert parse_target("local").local and parse_target("").local
    t = parse_target("ssh://ana@gpu-box.lab:2222?python=/opt/v/bin/python")
    assert (t.user, t.host, t.port, t.python) == ("ana", "gpu-box.lab", 2222, "/opt/v/bin/python")
    assert t.label == "ssh://ana@gpu-box.lab:2222"
    assert parse_target("gpu-box").label == "gpu-box"  # an alias of ~/.ssh/config
    assert Target.from_json(t.to_json()) == t
    for bad in ("http://x", "ssh://", "ssh://a@b:99999", "a b", "ssh://h?password=x", "-oProxyCommand=x"):
        with pytest.raises(SplitscopeError):
            parse_target(bad)


def test_an_unknown_host_key_is_refused_then_trusted_only_with_its_fingerprint(ssh_server, capsys):
    ssh_server.known_hosts.write_text("")
    url = _url(ssh_server)
    assert cli(["targets", "check", url]) == 2
    err = capsys.readouterr().err
    assert "is not in" in err and "SHA256:" in err
    assert ssh_server.known_hosts.read_text() == "", "an unknown host key must never be accepted silently"
    job = RemoteJob(ssh_server.target(), "test-sleep", {"seconds": 0})
    with pytest.raises(HostKeyUnknownError) as e:
        list(job.events(CancelToken()))
    fingerprint = e.value.fingerprint
    assert cli(["targets", "trust", url, "--fingerprint", "SHA256:not-it"]) == 2
    assert ssh_server.known_hosts.read_text() == ""
    assert cli(["targets", "trust", url, "--fingerprint", fingerprint]) == 0
    assert f"[127.0.0.1]:{ssh_server.port} ssh-ed25519 " in ssh_server.known_hosts.read_text()
    assert cli(["targets", "check", url]) == 0
    assert "Splitscope" in capsys.readouterr().out


def test_refused_keys_and_a_missing_splitscope_say_what_to_do(trusted, tmp_path):
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    with pytest.raises(RemoteError, match="refused the keys"):
        list(RemoteJob(trusted.target(client_keys=(str(other),)), "test-sleep", {"seconds": 0}).events())
    with pytest.raises(RemoteError, match="pip install 'splitscope"):
        list(RemoteJob(trusted.target(python="/usr/bin/python3"), "test-sleep", {"seconds": 0}).events())


def test_remote_profile_gives_the_local_json_naming_the_target(trusted, tmp_path):
    local, remote = tmp_path / "local.json", tmp_path / "remote.json"
    common = ["profile", str(MODEL), "--parser", "table", "--dim", "seq=16", "--iterations", "3", "--warmup", "1"]
    common += ["--profiled", "1"]
    assert cli([*common, "--json", str(local), "-q"]) == 0
    assert cli([*common, "--target", _url(trusted), "--json", str(remote), "-q"]) == 0
    a, b = json.loads(local.read_text()), json.loads(remote.read_text())
    assert set(b) - set(a) == {"target"} and set(a) <= set(b)
    assert b["target"] == f"ssh://{trusted.target().user}@127.0.0.1:{trusted.port}"
    assert b["model"] == a["model"] == str(MODEL), "the result names the user's file, not the target's copy"
    assert [r["name"] for r in b["per_node"]] and b["latency_ms"]["mean"] > 0
    # Pushed once, keyed by content: the second run sends nothing.
    args = {"model": str(MODEL), "dims": {"seq": 16}, "iterations": 2, "warmup": 0, "profiled": 1}
    job = RemoteJob(trusted.target(), "profile", args, push=("model",))
    list(job.events(CancelToken()))
    assert job.pushed == {"model": False}


def test_remote_calibrate_brings_the_model_back(trusted, tmp_path):
    out = tmp_path / "q" / "model_int8.onnx"
    out.parent.mkdir()
    doc = tmp_path / "cal.json"
    url = _url(trusted)
    args = ["calibrate", str(MODEL), "--dim", "seq=16", "--samples", "4", "--out", str(out), "--target", url]
    rc = cli([*args, "--json", str(doc), "-q"])
    assert rc == 0
    import onnx

    m = onnx.load(out)
    assert any(n.op_type == "QuantizeLinear" for n in m.graph.node)
    res = json.loads(doc.read_text())
    assert res["out"] == str(out) and res["target"].startswith("ssh://")
    assert [p.name for p in out.parent.iterdir()] == ["model_int8.onnx"], "no partial or temporary file is left"


def test_cancel_stops_the_job_on_the_target_and_leaves_nothing(trusted, tmp_path):
    token = CancelToken()
    cache = trusted.target().cache
    job = RemoteJob(trusted.target(), "test-sleep", {"seconds": 60})
    gen = job.events(token)
    for ev in gen:
        if isinstance(ev, Progress) and ev.stage == "sleep":
            break
    assert _children(cache), "the job should run on the target"
    token.cancel()
    with pytest.raises(JobCancelledError):
        for _ in gen:
            pass
    deadline = time.monotonic() + 60
    while _children(cache) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _children(cache), "Cancel must stop the child on the target"


def test_a_dropped_connection_ends_the_job_with_a_message_and_stops_it_there(trusted):
    cache = trusted.target().cache
    job = RemoteJob(trusted.target(), "test-sleep", {"seconds": 60})
    gen = job.events(CancelToken())
    for ev in gen:
        if isinstance(ev, Progress) and ev.stage == "sleep":
            break
    # The server's per-connection processes die, as when a network drops: the listener stays.
    out = subprocess.run(["pgrep", "-P", str(trusted.proc.pid)], capture_output=True, text=True).stdout.split()
    assert out
    for pid in out:
        os.kill(int(pid), 9)
    with pytest.raises(RemoteError, match="dropped midway"):
        for _ in gen:
            pass
    deadline = time.monotonic() + 60
    while _children(cache) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _children(cache), "the target's job must stop when its connection is gone"


def test_target_addresses_round_trip_and_a_sweep_runs_cells_on_the_target(trusted, tmp_path):
    t = trusted.target()
    assert parse_target(t.address()) == t
    from splitscope.engine.jobs import run_to_end
    from splitscope.engine.sweep.grid import expand
    from splitscope.engine.sweep.run import run_sweep

    cells = expand([str(MODEL)], {"seq": [16]}, ["ort-cpu"], ["fp32"], ["local", t.address()], iterations=3, warmup=1)
    doc = run_to_end(run_sweep(cells, ray=False, folder=tmp_path / "store"))
    assert [c["status"] for c in doc["cells"]] == ["done", "done"]
    assert doc["cells"][1]["label"].endswith(f"@ssh://{t.user}@127.0.0.1:{trusted.port}")


def test_a_changed_host_key_is_refused_and_never_trusted_over(ssh_server, tmp_path, capsys):
    other = tmp_path / "other_host"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    pub = (tmp_path / "other_host.pub").read_text().split()
    ssh_server.known_hosts.write_text(f"[127.0.0.1]:{ssh_server.port} {pub[0]} {pub[1]}\n")
    before = ssh_server.known_hosts.read_text()
    from splitscope.engine.remote.ssh import HostKeyChangedError

    with pytest.raises(HostKeyChangedError, match="CHANGED"):
        list(RemoteJob(ssh_server.target(), "test-sleep", {"seconds": 0}).events())
    real = (ssh_server.folder / "host_ed25519.pub").read_text().split()
    import asyncio

    from splitscope.engine.remote.ssh import _server_key

    fingerprint = asyncio.run(_server_key(ssh_server.target())).get_fingerprint()
    assert cli(["targets", "trust", _url(ssh_server), "--fingerprint", fingerprint]) == 2
    assert "already has a key" in capsys.readouterr().err
    assert ssh_server.known_hosts.read_text() == before and real[1] not in before


def test_the_same_content_under_another_name_is_sent_and_named_as_the_users(trusted, tmp_path):
    copy = tmp_path / "renamed_transformer.onnx"
    copy.write_bytes(MODEL.read_bytes())
    args = {"model": str(copy), "dims": {"seq": 16}, "iterations": 2, "warmup": 0, "profiled": 1}
    job = RemoteJob(trusted.target(), "profile", args, push=("model",))
    res = list_result(job)
    assert res["model"] == str(copy)


def list_result(job):  # type: ignore[no-untyped-def]
    gen = job.events(CancelToken())
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            return stop.value


def test_remote_kernel_brings_the_plugin_project_back(trusted, tmp_path):
    """The kernel workbench's job on the target (no GPU there: its CPU parts), its plugin project fetched whole."""
    from splitscope.engine.sample import SAMPLE_MODEL

    out, doc = tmp_path / "dcn_plugin", tmp_path / "kernel.json"
    out.mkdir()
    (out / "stale.txt").write_text("from before")  # the project replaces the folder whole
    args = ["kernel", str(SAMPLE_MODEL), "--parser", "table", "--out", str(out), "--json", str(doc), "-q"]
    assert cli([*args, "--target", _url(trusted)]) == 0
    res = json.loads(doc.read_text())
    assert res["target"].startswith("ssh://") and (out / "plugin.py").exists() and not (out / "stale.txt").exists()
    assert res["plugin"]["folder"] == str(out)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "no staging folder is left"
