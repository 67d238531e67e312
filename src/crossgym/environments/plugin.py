"""Registers the built-in environments and task sources."""

from __future__ import annotations

from crossgym.plugins import hookimpl
from crossgym.plugins.registry import Registrar


@hookimpl
def crossgym_register_environments(registry: Registrar) -> None:
    pass


@hookimpl
def crossgym_register_task_sources(registry: Registrar) -> None:
    pass
