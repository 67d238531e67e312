"""ShellSession: one scratch directory kept across the commands of a multi-turn episode."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping

from crossgym.protocol.errors import SandboxError

from . import execute
from . import files as filetree
from .pool import Sandbox
from .result import ExecResult, Limits


class ShellSession:
    """Run shell commands one after another in the same directory; each command is its own confined task.

    Nothing but files carries over between commands (no processes, no environment changes, no cwd).
    ``files`` is the directory's content after the last command; ``close()`` removes the directory.
    """

    def __init__(self, files: Mapping[str, str | bytes] | None = None, *, sandbox: Sandbox,
                 timeout: float | None = None, limits: Limits | None = None,
                 env: Mapping[str, str] | None = None, shell: str | None = None) -> None:
        self._sandbox = sandbox
        self._timeout = timeout
        self._limits = limits or Limits()
        self._env = dict(env or {})
        self._shell = shell or default_shell()
        self._lock = threading.Lock()
        seeds = filetree.normalize(files)
        self.path: str | None = sandbox.new_scratch()
        execute.write_seeds(self.path, seeds)
        self._files: dict[str, bytes] = dict(seeds)
        self.history: list[ExecResult] = []

    @property
    def tier(self) -> str:
        """The isolation tier the commands run in."""
        return self._sandbox.tier

    @property
    def files(self) -> dict[str, bytes]:
        """The scratch directory's regular files after the last command (capped like ExecResult.files)."""
        return dict(self._files)

    def exists(self, path: str) -> bool:
        """Whether anything is at ``path`` after the last command: a file, a directory, a link or a special file
        (``files`` holds regular files only); links are never followed. SandboxError once closed."""
        with self._lock:
            if self.path is None:
                raise SandboxError("this shell session is closed")
            return filetree.present(self.path, path)

    def entries(self) -> tuple[set[str], bool]:
        """(paths that are not regular files: directories, links, fifos; True when the walk was cut at the
        snapshot's caps) after the last command, read without following links. SandboxError once closed."""
        with self._lock:
            if self.path is None:
                raise SandboxError("this shell session is closed")
            return filetree.entries(self.path, self._limits)

    def run(self, command: str, *, stdin: str | bytes | None = None, timeout: float | None = None) -> ExecResult:
        """Run one command (a shell script) in the session's directory."""
        with self._lock:
            if self.path is None:
                raise SandboxError("this shell session is closed")
            result, _ = execute.run(self._sandbox, "exec", {"argv": [self._shell, "-c", command]}, files=None,
                                    stdin=stdin, timeout=timeout if timeout is not None else self._timeout,
                                    limits=self._limits, env=self._env, scratch=self.path, before=self._files)
            if result.files is not None:
                self._files = dict(result.files)
            self.history.append(result)
            return result

    def close(self) -> dict[str, bytes]:
        """Remove the directory; returns the files as they were after the last command."""
        with self._lock:
            if self.path is not None:
                self._sandbox.discard(self.path)
                self.path = None
            return dict(self._files)

    def __enter__(self) -> ShellSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        path = getattr(self, "path", None)
        if path is not None and os.path.isdir(path):
            execute.remove_tree(path)


def default_shell() -> str:
    """bash where it exists, else sh."""
    return "/bin/bash" if os.access("/bin/bash", os.X_OK) else "/bin/sh"
