"""The only hook specification module. Each hook receives a registrar and adds entries to it.

Registrars store ``"module:attr"`` strings, so registering imports nothing heavy; the object is imported the
first time it is used. Types are imported under TYPE_CHECKING so importing this module stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

NAME = "crossgym"
hookspec = pluggy.HookspecMarker(NAME)
hookimpl = pluggy.HookimplMarker(NAME)

if TYPE_CHECKING:
    from crossgym.plugins.registry import Registrar


@hookspec
def crossgym_register_verifiers(registry: Registrar) -> None:
    """Add verifiers: ``registry.add("name", "pkg.module:VerifierClass", description=...)``.

    The target is a class (or factory) called with the VerifierSpec's params as keywords.
    """


@hookspec
def crossgym_register_environments(registry: Registrar) -> None:
    """Add environments: a class (or factory) that makes one episode per call, taking params as keywords."""


@hookspec
def crossgym_register_task_sources(registry: Registrar) -> None:
    """Add task sources: a callable ``source(**params) -> Iterable[Task]`` (generators take n and seed)."""


@hookspec
def crossgym_register_backends(registry: Registrar) -> None:
    """Add training backends: a TrainingBackend class; give ``requires`` and ``install`` so `crossgym list`
    can say whether it is available without importing the framework."""


@hookspec
def crossgym_register_engines(registry: Registrar) -> None:
    """Add inference engines: an InferenceEngine class taking its settings as keywords."""
