"""Sandbox fixtures: one private pool per tier (strong skipped with the reason where bubblewrap cannot run),
and helpers to find the marker processes an attack may leave behind."""

from __future__ import annotations

import os
import secrets
import signal
import time
from collections.abc import Iterator

import pytest

from crossgym.sandbox import Sandbox, config

STRONG_SKIP = ("bubblewrap (bwrap) is missing or cannot create namespaces on this machine, so the strong tier "
               "cannot run; install it with: apt-get install bubblewrap")
TIERS = [pytest.param("default", id="default"),
         pytest.param("strong", id="strong", marks=pytest.mark.skipif(not config.bwrap_works(), reason=STRONG_SKIP))]


@pytest.fixture(scope="module", params=TIERS)
def sandbox(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    """A private two-worker pool of one tier; afterwards no scratch directory may be left."""
    pool = Sandbox(request.param, workers=2)
    yield pool
    root = pool._scratch_root
    deadline = time.monotonic() + 3.0  # the server removes a task's directory just after reporting it
    while root and leftovers_in(root) and time.monotonic() < deadline:
        time.sleep(0.05)
    leftovers = leftovers_in(root) if root and os.path.isdir(root) else []
    pool.close()
    assert not leftovers, f"scratch directories left behind: {leftovers}"
    assert root is None or not os.path.exists(root)


@pytest.fixture(params=["single", "group"])
def call(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each test twice: its solution judged alone ("single"), and ("group") also as the second of a group beside the
    module's saboteur, whose verdict must be the solo one: the module's ``judge`` reads its ``GROUPED["on"]``."""
    grouped = request.module.GROUPED
    grouped["on"] = request.param == "group"
    yield request.param
    grouped["on"] = False


def leftovers_in(root: str) -> list[str]:
    """What tasks left in a pool's scratch root: every entry but the slots' own directories (``z<slot>-...``,
    kept by their zygotes between tasks), which may hold only the empty directories kept for their next task and
    its solutions (``w...``, ``s...``), and the trash, which the sweeper empties."""
    found = []
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name)
        if (name.startswith("z") or name == ".trash") and os.path.isdir(path) and not os.path.islink(path):
            found += [f"{name}/{entry}" for entry in sorted(os.listdir(path))
                      if not (name.startswith("z") and entry[:1] in "ws" and not os.listdir(f"{path}/{entry}"))]
        else:
            found.append(name)
    return found


class Marker:
    """A unique `sleep` argument (below 30 s, so even a leaked process ends by itself)."""

    def __init__(self) -> None:
        self.arg = f"29.{secrets.randbelow(10**6):06d}"

    def pids(self) -> list[int]:
        """Processes whose command line is exactly `sleep <arg>` (only ones this test's attack started)."""
        needle = b"sleep\0" + self.arg.encode() + b"\0"
        found = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/cmdline", "rb") as fh:
                        if fh.read().endswith(needle):
                            found.append(int(entry))
                except OSError:
                    pass
        return found

    def survivors(self, within: float = 1.0) -> list[int]:
        """Marker processes still alive after ``within`` seconds (a killed process takes a moment to go)."""
        deadline = time.monotonic() + within
        while True:
            alive = self.pids()
            if not alive or time.monotonic() > deadline:
                return alive
            time.sleep(0.05)


@pytest.fixture
def marker() -> Iterator[Marker]:
    """A process marker; whatever still carries it after the test is killed (it can only be ours)."""
    mark = Marker()
    yield mark
    for pid in mark.pids():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
