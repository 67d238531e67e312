"""The error tree. Every error crossgym raises on purpose is a CrossgymError.

User errors (bad config, unknown names, missing frameworks) carry one line that says what went wrong,
where, and how to fix it; the CLI prints that line and exits 2.
"""

from __future__ import annotations


class CrossgymError(Exception):
    """Base of every error crossgym raises on purpose."""

    #: CLI exit code for this error.
    exit_code: int = 2


class ConfigError(CrossgymError):
    """A configuration (file, flag or parameter) is wrong.

    ``where`` is the file and field (``run.yaml: grpo.learning_rate``), ``fix`` how to repair it.
    """

    def __init__(self, message: str, *, where: str | None = None, fix: str | None = None) -> None:
        self.message = message
        self.where = where
        self.fix = fix
        text = f"{where}: {message}" if where else message
        if fix:
            text = f"{text} (fix: {fix})"
        super().__init__(text)


class UnknownNameError(ConfigError):
    """A verifier, environment, task source, backend or engine name is not registered."""


class BackendUnavailable(CrossgymError):
    """A backend or engine cannot run here; ``install`` is the exact command that fixes it (or None)."""

    def __init__(self, name: str, reason: str, install: str | None = None) -> None:
        self.name = name
        self.reason = reason
        self.install = install
        text = f"{name} is not available: {reason}"
        if install:
            text = f"{text}; install it with: {install}"
        super().__init__(text)


class VerifierError(CrossgymError):
    """A verifier cannot be built (bad params, missing dependency). Never raised for a bad completion."""


class SandboxError(CrossgymError):
    """The sandbox itself failed (could not start a worker, bad request); not a failing task."""


class PluginError(CrossgymError):
    """A plugin is broken: a duplicate name, an unknown hook, a target that does not import."""
