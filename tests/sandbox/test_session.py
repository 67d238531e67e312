"""ShellSession: one scratch directory across the commands of an episode."""

from __future__ import annotations

import os

import pytest

from crossgym.protocol.errors import SandboxError
from crossgym.sandbox import Sandbox, ShellSession


def test_files_persist_and_nothing_else_does(sandbox: Sandbox) -> None:
    with ShellSession({"notes.txt": "one\n"}, sandbox=sandbox, env={"GREETING": "hi"}) as sh:
        first = sh.run("echo two >> notes.txt; mkdir sub; cd sub; export LEFT=1; echo $GREETING > g.txt")
        assert first.ok and first.files_changed == ("notes.txt", "sub/g.txt")
        second = sh.run("pwd | grep -c sub; echo ${LEFT:-unset}; cat notes.txt")
        assert second.stdout == "0\nunset\none\ntwo\n" and second.files_changed == ()
        third = sh.run("rm sub/g.txt; cat", stdin="piped")
        assert third.stdout == "piped" and third.files_changed == ("sub/g.txt",)
        assert sh.files == {"notes.txt": b"one\ntwo\n"} and len(sh.history) == 3
        assert sh.tier == sandbox.tier
        path = sh.path
    assert path is not None and not os.path.exists(path)
    with pytest.raises(SandboxError, match="closed"):
        sh.run("true")


def test_a_command_past_its_deadline(sandbox: Sandbox) -> None:
    with ShellSession(sandbox=sandbox, timeout=1.0) as sh:
        slow = sh.run("echo started > s.txt; sleep 20")
        assert slow.timed_out and slow.limit_hit == "wall" and slow.files == {"s.txt": b"started\n"}
        assert sh.run("cat s.txt", timeout=5).stdout == "started\n"


def test_close_returns_the_final_files(sandbox: Sandbox) -> None:
    sh = ShellSession(sandbox=sandbox)
    sh.run("printf done > result.txt")
    assert sh.close() == {"result.txt": b"done"}
    assert sh.close() == {"result.txt": b"done"}
