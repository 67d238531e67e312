"""Launch a training framework's own command line and honour ``stop``: one process group, its output streamed
line by line to a log file and to the backend, and a stop that ends the whole group.

The process starts in a session of its own (``start_new_session``), so the terminal's Ctrl-C reaches crossgym
only; crossgym then decides. ``stop`` set (the CLI's first Ctrl-C): the group gets SIGINT, then SIGTERM after
``grace_s``, then SIGKILL after ``grace_s`` more, so a framework that saves on SIGINT can, and one that ignores it
still ends. A KeyboardInterrupt here (the second Ctrl-C) skips the SIGINT grace: SIGTERM, then SIGKILL. Only this
group is ever signalled.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from signal import Signals

from crossgym.protocol.interfaces import StopSignal

log = logging.getLogger(__name__)

#: seconds between SIGINT and SIGTERM (and SIGTERM and SIGKILL) when stop is set
GRACE_S = 30.0
#: how often the stop watcher looks at ``stop``
POLL_S = 0.2
#: what a Plan note says about stop for a launched backend
STOP_NOTE = ("stop (the first Ctrl-C in `crossgym train`): the launched process group gets SIGINT, then SIGTERM "
             f"after {GRACE_S:.0f} s, then SIGKILL; the last checkpoint the framework saved is kept")


@dataclass
class Launched:
    """How a launched process ended."""

    returncode: int
    stopped: bool
    """``stop`` was set (or Ctrl-C came) and the group was told to end."""
    log_path: Path
    tail: list[str] = field(default_factory=list)
    """The last lines of output."""
    signals: list[str] = field(default_factory=list)
    """The signals sent to the group, in order (``SIGINT``, ``SIGTERM``, ``SIGKILL``)."""

    def last_line(self) -> str:
        return next((t for t in reversed(self.tail) if t.strip()), "no output")


class _Group:
    """The launched process group, and the one way to end it (escalating, each signal sent at most once)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.sent: list[str] = []
        self._lock = threading.Lock()

    def signal(self, sig: Signals) -> None:
        with self._lock:
            if sig.name in self.sent:
                return
            self.sent.append(sig.name)
        try:
            os.killpg(self.proc.pid, sig)  # start_new_session made the group ours alone
        except (ProcessLookupError, PermissionError):
            pass

    def end(self, sigs: Sequence[Signals], grace_s: float) -> None:  # (self.signal shadows the module here)
        """Send ``sigs`` in turn, waiting ``grace_s`` after each for the process to exit; SIGKILL last."""
        for sig in sigs:
            if self.proc.poll() is not None:
                return
            self.signal(sig)
            try:
                self.proc.wait(timeout=grace_s)
                return
            except subprocess.TimeoutExpired:
                continue
        if self.proc.poll() is None:
            self.signal(signal.SIGKILL)

    def reap(self, wait_s: float = 2.0) -> None:
        """Once the leader is gone, give the rest of the group ``wait_s`` to follow, then SIGKILL what is left
        (workers that outlive it would hold the log pipe and the GPUs)."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                os.killpg(self.proc.pid, 0)
            except (ProcessLookupError, PermissionError):
                return
            if time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        log.warning("killing what is left of the launched process group %d", self.proc.pid)
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def launch(argv: Sequence[str], *, cwd: str | Path, log_path: str | Path, env: Mapping[str, str] | None = None,
           on_line: Callable[[str], None] | None = None, stop: StopSignal | None = None, grace_s: float = GRACE_S,
           tail_lines: int = 20) -> Launched:
    """Run ``argv`` in ``cwd`` until it exits; every output line goes to ``log_path`` and ``on_line``."""
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(list(argv), cwd=str(cwd), env=dict(env) if env is not None else None,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
                            errors="replace", bufsize=1, start_new_session=True,
                            preexec_fn=_sigint_default)
    group = _Group(proc)
    done = threading.Event()
    stopped = threading.Event()

    def watch() -> None:
        assert stop is not None
        while not done.is_set() and proc.poll() is None:
            if stop.wait(POLL_S):
                stopped.set()
                log.warning("stop: ending the launched process group (SIGINT, SIGTERM after %g s)", grace_s)
                group.end((signal.SIGINT, signal.SIGTERM), grace_s)
                return

    watcher = threading.Thread(target=watch, name="crossgym-stop", daemon=True) if stop is not None else None
    if watcher is not None:
        watcher.start()
    tail: list[str] = []
    try:
        with log_path.open("w", encoding="utf-8") as fh:
            assert proc.stdout is not None
            for raw in proc.stdout:
                fh.write(raw)
                fh.flush()
                line = raw.rstrip("\n")
                tail = (tail + [line])[-tail_lines:]
                if on_line is not None:
                    on_line(line)
        code = proc.wait()
    except KeyboardInterrupt:
        stopped.set()
        group.end((signal.SIGTERM,), min(grace_s, 5.0))
        code = proc.wait()
    finally:
        done.set()
        if proc.poll() is None:  # an exception in on_line: the run must not outlive us
            group.end((signal.SIGTERM,), min(grace_s, 5.0))
            proc.wait()
        group.reap()
        if proc.stdout is not None:
            proc.stdout.close()
    if watcher is not None:
        watcher.join(timeout=grace_s * 2 + 1)
    return Launched(returncode=code, stopped=stopped.is_set(), log_path=log_path, tail=tail,
                    signals=list(group.sent))


def child_env(**extra: str) -> dict[str, str]:
    """This process's environment with telemetry off and unbuffered Python output, plus ``extra``."""
    return {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "DO_NOT_TRACK": "1", "VLLM_NO_USAGE_STATS": "1",
            "WANDB_MODE": os.environ.get("WANDB_MODE", "disabled"), "PYTHONUNBUFFERED": "1", **extra}


def _sigint_default() -> None:
    """In the child, before exec: SIGINT back to its default. A process started in the background (``cmd &``,
    nohup, some CI runners) inherits SIGINT ignored, and Python then installs no KeyboardInterrupt handler: the
    framework would never see the "save and stop" signal the stop protocol sends first."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
