"""Registered-but-not-built plugins: listed honestly, and failing with one clear line when used."""

from __future__ import annotations

from typing import Any

from crossgym.protocol.errors import BackendUnavailable
from crossgym.protocol.interfaces import Capabilities


class Pending:
    """A backend or engine whose crossgym integration does not exist yet in this version."""

    name = "pending"
    capabilities = Capabilities()
    #: What is missing, in one line (shown by `crossgym list`).
    reason = "not implemented in this version of crossgym"

    def __init__(self, **params: Any) -> None:
        self.params = params

    def check(self) -> None:
        raise BackendUnavailable(self.name, self.reason, None)

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):
            raise AttributeError(attr)
        self.check()
        raise AttributeError(attr)


def pending(name: str, reason: str) -> type[Pending]:
    """A Pending subclass for ``name``."""
    return type(f"Pending_{name}", (Pending,), {"name": name, "reason": reason})
