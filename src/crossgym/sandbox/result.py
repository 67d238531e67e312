"""What the sandbox takes (Limits) and gives back (ExecResult, TestRunResult)."""

from __future__ import annotations

import dataclasses
import math
import signal as _signal
from dataclasses import dataclass, field
from typing import Any

MiB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """Per-task resource limits. ``None`` leaves a limit unset (not recommended for untrusted code)."""

    memory_mb: int | None = 1024
    """Address space per process (RLIMIT_AS)."""
    cpu_s: float | None = None
    """CPU seconds per process (RLIMIT_CPU); default: the wall timeout rounded up, plus one."""
    file_size_mb: int | None = 64
    """Largest file a task may write (RLIMIT_FSIZE)."""
    open_files: int | None = 256
    """Open file descriptors per process (RLIMIT_NOFILE)."""
    processes: int | None = 64
    """Processes and threads per task (RLIMIT_NPROC on the slot's own uid when the pool runs as root)."""
    stack_mb: int | None = 8
    """Stack size (RLIMIT_STACK): 8 MiB, as on most systems, whatever the caller was started with (``None``:
    inherited from the caller, so how deep a solution may recurse would depend on its ``ulimit -s``)."""
    output_bytes: int = 1 * MiB
    """stdout and stderr are each kept up to this many bytes."""
    max_output_bytes: int = 16 * MiB
    """A task that writes more than this (both streams together) is killed."""
    max_files: int = 1000
    """At most this many files are returned in ``ExecResult.files``."""
    max_file_bytes: int = 1 * MiB
    """A returned file's content is cut at this many bytes."""
    max_files_bytes: int = 16 * MiB
    """All returned files together are cut at this many bytes."""

    def rlimits(self, timeout: float) -> dict[str, int]:
        """The rlimit values the server applies, in bytes and whole seconds."""
        cpu = self.cpu_s if self.cpu_s is not None else math.ceil(timeout) + 1
        out = {"cpu": max(1, math.ceil(cpu))}
        for key, value, scale in (("memory", self.memory_mb, MiB), ("file_size", self.file_size_mb, MiB),
                                  ("open_files", self.open_files, 1), ("processes", self.processes, 1),
                                  ("stack", self.stack_mb, MiB)):
            if value is not None:
                out[key] = int(value * scale)
        return out

    def replace(self, **changes: Any) -> Limits:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class ExecResult:
    """The outcome of one task. ``exit_code`` is negative (``-signal``) when a signal ended it."""

    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool = False
    signal: int | None = None
    wall_s: float = 0.0
    cpu_s: float = 0.0
    limit_hit: str | None = None
    """"wall", "cpu", "memory", "output", "file_size", "processes" or "open_files" (best effort), or None."""
    files: dict[str, bytes] | None = None
    """The scratch directory's regular files after the task (shell tasks and sessions), capped."""
    files_changed: tuple[str, ...] = ()
    """Paths added, modified or removed by the task, relative to the scratch directory."""
    tier: str = "default"
    truncated: bool = False
    """True when stdout, stderr or the returned files were cut at their caps."""
    truncated_parts: tuple[str, ...] = ()
    """Which were cut: "stdout", "stderr", "files" (a judge of a cut observation must fail it or say so)."""

    @property
    def ok(self) -> bool:
        """Exited with status 0 within its time."""
        return self.exit_code == 0 and not self.timed_out

    @property
    def signal_name(self) -> str | None:
        """"SIGKILL" and so on, or None."""
        if self.signal is None:
            return None
        try:
            return _signal.Signals(self.signal).name
        except ValueError:
            return f"signal {self.signal}"

    def text(self, path: str) -> str:
        """A returned file decoded as UTF-8 (with replacement); KeyError when it is not there."""
        if self.files is None or path not in self.files:
            raise KeyError(path)
        return self.files[path].decode("utf-8", "replace")


@dataclass(frozen=True)
class TestDetail:
    """One test unit: its first source line, whether it passed, and why not."""

    __test__ = False  # not a pytest class

    name: str
    passed: bool
    error: str | None = None


@dataclass(frozen=True)
class TestRunResult:
    """Tests judged by a harness the solution cannot reach: ``passed`` of ``total`` units."""

    __test__ = False  # not a pytest class

    passed: int
    total: int
    details: tuple[TestDetail, ...] = ()
    error: str | None = None
    """Why the run as a whole went wrong: "timeout", "solution: ...", "setup: ...", "tests: ...", or None."""
    exec: ExecResult | None = field(default=None, repr=False)
    """The task's process outcome (stdout/stderr of the solution, timing, tier)."""

    @property
    def fraction(self) -> float:
        """passed / total (0.0 when there are no tests)."""
        return self.passed / self.total if self.total else 0.0

    @property
    def all_passed(self) -> bool:
        """Every unit passed, there was at least one, and nothing failed outside the units."""
        return self.total > 0 and self.passed == self.total and self.error is None
