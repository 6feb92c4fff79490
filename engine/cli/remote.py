"""``--target`` on ``profile`` and ``calibrate``, and ``splitscope targets check|trust TARGET``.

A remote run is the same child job as the window's, on the target (:class:`splitscope.engine.remote.job.RemoteJob`):
its JSON is the local one with ``target`` added; the calibrated model comes back to ``--out`` when it succeeded.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from splitscope.engine.cli.analyze import _dims, _run_with_bar
from splitscope.engine.errors import SplitscopeError
from splitscope.engine.remote.target import Target, parse_target


def _run(target: Target, kind: str, job_args: dict[str, Any], push: tuple[str, ...], fetch: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    from splitscope.engine.jobs import CancelToken
    from splitscope.engine.remote.job import RemoteJob

    return _run_with_bar(RemoteJob(target, kind, job_args, push=push, fetch=fetch).events(CancelToken()))


def remote_profile(args: argparse.Namespace, target: Target) -> dict[str, Any]:
    """``profile --target``: the profile's JSON from the target, naming it."""
    if args.custom_op_library:
        raise SplitscopeError("--custom-op-library is a file of this machine: install it on the target and run there.")
    from splitscope.engine.sample import SAMPLE_MODEL

    job = {
        "model": str(args.model or SAMPLE_MODEL),
        "parser": args.parser,
        "dims": _dims(args.dim),
        "backend": args.backend,
        "iterations": args.iterations,
        "warmup": args.warmup,
        "profiled": args.profiled,
        "input": args.input,
    }
    return dict(_run(target, "profile", job, push=("model", "input")))


def remote_calibrate(args: argparse.Namespace, target: Target) -> dict[str, Any]:
    """``calibrate --target``: statistics and the written model made on the target; the model comes back to --out."""
    from pathlib import Path

    from splitscope.engine.sample import SAMPLE_MODEL

    data = args.data if args.data == "random" or not Path(args.data).exists() else str(Path(args.data).resolve())
    job = {
        "model": str(args.model or SAMPLE_MODEL),
        "out": str(Path(args.out).resolve()),
        "data": data,
        "method": args.method,
        "precision": args.precision,
        "samples": args.samples,
        "keep": args.keep,
        "dims": _dims(args.dim),
        "budget": args.budget,
        "half": args.fp16 or args.bf16,
        "half_precision": "bf16" if args.bf16 else "fp16",
        "labels": args.labels,
        "recipe": args.recipe,
        "metric": args.metric,
        "percentile": args.percentile,
        "sensitivity": args.sensitivity,
        "backend": args.backend,
    }
    push = ("model", "labels") + (("data",) if data != "random" else ())
    return dict(_run(target, "calibrate", job, push=push, fetch=("out",)))


def _cmd_targets(args: argparse.Namespace) -> int:
    from splitscope.engine.remote import ssh

    target = parse_target(args.target)
    if target.local:
        raise SplitscopeError("'local' is this machine: nothing to check or trust.")
    if args.action == "trust":
        seen = ssh.host_fingerprint(target)
        if seen is None:
            raise SplitscopeError(f"{target.label} shows no host key: check the address.")
        algorithm, fingerprint = seen
        if args.fingerprint is None:
            print(f"{target.label} shows the host key {algorithm} {fingerprint}.")
            if not sys.stdin.isatty():
                raise SplitscopeError("Compare it with the machine's own, then run again with --fingerprint FP.")
            if input("Is this the machine's key? Trust it [y/N] ").strip().lower() not in ("y", "yes"):
                print("Not trusted: nothing was written.")
                return 1
        elif args.fingerprint != fingerprint:
            raise SplitscopeError(
                f"{target.label} shows {fingerprint}, not {args.fingerprint}: nothing was trusted. Check the machine."
            )
        path = ssh.trust(target, fingerprint)
        print(f"Trusted {target.label} ({algorithm} {fingerprint}) in {path}.")
        return 0
    import asyncio

    info = asyncio.run(ssh.check(target))
    if not info.ok:
        raise SplitscopeError(info.message)
    print(f"{target.label}: {info.summary}")
    return 0


def add_parser(sub: Any) -> None:
    t = sub.add_parser("targets", help="check an SSH target (Splitscope there, its GPU), or trust its host key")
    t.add_argument("action", choices=["check", "trust"])
    t.add_argument("target", metavar="TARGET", help="ssh://user@host[:port] or a host alias")
    t.add_argument("--fingerprint", metavar="SHA256:...", help="trust: the key you checked (asked for otherwise)")
    t.set_defaults(func=_cmd_targets)
