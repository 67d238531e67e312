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


def test_exists_sees_every_kind_of_entry_without_following_links(sandbox: Sandbox) -> None:
    """``files`` holds regular files only; ``exists`` answers for directories, links and fifos too, and a link is
    never followed (one to the scratch's parent names nothing beyond it)."""
    with ShellSession({"keep/a.txt": "a", "gone.txt": "g"}, sandbox=sandbox) as sh:
        sh.run("mkdir empty; ln -s /etc link; ln -s .. up; mkfifo pipe; rm gone.txt; touch f")
        assert set(sh.files) == {"keep/a.txt", "f"}
        for path in ("keep", "keep/a.txt", "./keep//a.txt", "empty", "link", "link/passwd", "up", "pipe", "f"):
            assert sh.exists(path), path
        for path in ("gone.txt", "keep/b.txt", "empty/x", "f/x", "nothing"):
            assert not sh.exists(path), path
        with pytest.raises(SandboxError, match="bad file path"):
            sh.exists("../x")
    with pytest.raises(SandboxError, match="closed"):
        sh.exists("keep")
