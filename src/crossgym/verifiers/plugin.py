"""Registers the built-in verifiers."""

from __future__ import annotations

from crossgym.plugins import hookimpl
from crossgym.plugins.registry import Registrar


@hookimpl
def crossgym_register_verifiers(registry: Registrar) -> None:
    pass
