"""One request, start to finish: build the payload, pick the path (pool or own bubblewrap), decode the result."""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping, Sequence
from typing import Any

from crossgym.protocol.errors import SandboxError

from . import files as filetree
from ._runtime import cleanup, wire
from .pool import Sandbox
from .result import ExecResult, Limits
from .transport import Raw

DEFAULT_TIMEOUT = 10.0
_BASE_ENV_KEYS = {"PATH", "HOME", "TMPDIR"}


def payload(fields: dict[str, Any], files: Mapping[str, bytes] | None, stdin: str | bytes | None) -> bytes:
    """Header frame, then each seed file's bytes, then stdin (the task reads on from the same pipe)."""
    seeds = list((files or {}).items())
    head = dict(fields, files=[[path, len(data), 0o644] for path, data in seeds])
    parts = [wire.pack(head)] + [data for _, data in seeds]
    if stdin is not None:
        parts.append(stdin.encode() if isinstance(stdin, str) else bytes(stdin))
    return b"".join(parts)


def check_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """Extra environment variables for a task (strings only; PATH, HOME and TMPDIR are the sandbox's)."""
    out = {}
    for key, value in (env or {}).items():
        if not isinstance(key, str) or not isinstance(value, str) or "=" in key or not key or "\0" in key + value:
            raise SandboxError(f"bad environment variable {key!r}: names and values must be plain strings")
        if key not in _BASE_ENV_KEYS:
            out[key] = value
    return out


def run(sandbox: Sandbox, mode: str, fields: dict[str, Any], *, files: Mapping[str, str | bytes] | None,
        stdin: str | bytes | None, timeout: float | None, limits: Limits | None, env: Mapping[str, str] | None,
        return_files: bool = False, scratch: str | None = None, before: Mapping[str, bytes] | None = None,
        result_pipe: bool = False, header: Mapping[str, Any] | None = None) -> tuple[ExecResult, Raw]:
    """Run one task; ``scratch`` (a session's directory) implies returning files."""
    timeout = float(timeout if timeout is not None else DEFAULT_TIMEOUT)
    if not timeout > 0:
        raise SandboxError(f"timeout must be positive, got {timeout}")
    limits = limits or Limits()
    seeds = filetree.normalize(files)
    fields = dict(fields, env=check_env(env))
    hdr = {"mode": mode, "limits": limits.rlimits(timeout), **(header or {})}
    own_dir = None
    if return_files or scratch:
        if scratch is None:
            scratch = own_dir = sandbox.new_scratch()
            write_seeds(scratch, seeds)
            before = dict(seeds)
            hdr["discard"] = True  # read once and thrown away: the server need not hand it back
        hdr["scratch"] = scratch
        data = payload(fields, None, stdin)
    else:
        data = payload(fields, seeds, stdin)
    try:
        if scratch and sandbox.tier == "strong" and mode == "exec":
            raw = sandbox.submit_isolated(hdr, data, scratch=scratch, timeout=timeout, limits=limits)
        else:
            raw = sandbox.submit(hdr, data, timeout=timeout, limits=limits, result_pipe=result_pipe)
        if raw.setup_error is not None:
            raise SandboxError(f"the sandbox could not start the task: {raw.setup_error}")
        tree: dict[str, bytes] | None = None
        changed: tuple[str, ...] = ()
        cut = False
        if scratch:
            tree, cut = filetree.snapshot(scratch, limits)
            changed = filetree.changed(before or {}, tree)
    finally:
        if own_dir:
            sandbox.discard(own_dir)  # in the background: what the task left never delays the call
    return to_result(raw, sandbox.tier, limits, timeout, tree, changed, cut), raw


def to_result(raw: Raw, tier: str, limits: Limits, timeout: float, tree: dict[str, bytes] | None,
              changed: Sequence[str], cut: bool) -> ExecResult:
    """Decode streams (UTF-8 with replacement) and name the limit that ended the task."""
    parts = tuple(name for name, data in (("stdout", raw.stdout), ("stderr", raw.stderr))
                  if raw.truncated and len(data) >= limits.output_bytes) + (("files",) if cut else ())
    return ExecResult(exit_code=raw.exit, stdout=raw.stdout.decode("utf-8", "replace"),
                      stderr=raw.stderr.decode("utf-8", "replace"), timed_out=raw.timed_out, signal=raw.signal,
                      wall_s=round(raw.wall, 6), cpu_s=round(raw.cpu, 6),
                      limit_hit=limit_hit(raw, limits.rlimits(timeout)["cpu"]), files=tree,
                      files_changed=tuple(changed), tier=tier, truncated=raw.truncated or cut,
                      truncated_parts=parts)


def limit_hit(raw: Raw, cpu_limit: float) -> str | None:
    """Best effort: signals first, then the tail of stderr for errors a limit typically causes."""
    if raw.killed_for == "output":
        return "output"
    if raw.timed_out:
        return "wall"
    if raw.signal == signal.SIGXCPU or (raw.signal == signal.SIGKILL and raw.cpu >= cpu_limit - 0.05):
        return "cpu"
    if raw.signal == signal.SIGXFSZ:
        return "file_size"
    if raw.exit != 0:
        tail = raw.stderr[-4096:]
        if any(m in tail for m in (b"MemoryError", b"Cannot allocate memory", b"std::bad_alloc", b"out of memory")):
            return "memory"
        if b"File too large" in tail:
            return "file_size"
        if b"Too many open files" in tail:
            return "open_files"
        if b"Resource temporarily unavailable" in tail or b"can't start new thread" in tail:
            return "processes"
    return None


def write_seeds(root: str, seeds: Mapping[str, bytes]) -> None:
    """Write seed files into a fresh directory we created (no links can be there yet)."""
    for rel, data in seeds.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(data)


def remove_tree(path: str) -> None:
    """Remove a scratch directory even where the task took away its own permissions, however deep."""
    cleanup.remove_tree(path)
