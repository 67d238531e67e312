"""What is registered and whether it can run here: the data behind `crossgym list`."""

from __future__ import annotations

from typing import Any

from crossgym.plugins.manager import get_plugins
from crossgym.plugins.registry import Entry
from crossgym.protocol.errors import BackendUnavailable, CrossgymError


def _first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


def _verifier_row(entry: Entry, registry: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"name": entry.name, "version": None, "description": entry.description,
                           "dist": entry.dist}
    try:
        cls = registry.load(entry.name)
        row["version"] = str(getattr(cls, "version", "")) or None
        row["description"] = entry.description or _first_line(cls.__doc__)
    except CrossgymError as exc:
        row["error"] = str(exc)
    return row


def _plain_row(entry: Entry, registry: Any) -> dict[str, Any]:
    return {"name": entry.name, "description": entry.description, "dist": entry.dist}


def _runnable_row(entry: Entry, registry: Any) -> dict[str, Any]:
    """A backend or engine: available yes/no, and when no the reason and the install command."""
    row: dict[str, Any] = {"name": entry.name, "description": entry.description, "dist": entry.dist,
                           "available": False, "reason": None, "install": entry.install,
                           "capabilities": dict(entry.capabilities)}
    missing = entry.missing_requirements()
    try:
        cls = registry.load(entry.name)
        row["capabilities"] = cls.capabilities.to_dict()  # declared by the protocol (backends and engines)
        if missing:
            raise BackendUnavailable(entry.name, f"missing Python package(s): {', '.join(missing)}",
                                     entry.install)
        cls().check()
        row["available"] = True
    except BackendUnavailable as exc:
        row["reason"] = exc.reason
        row["install"] = exc.install if exc.install is not None else (entry.install if missing else None)
    except CrossgymError as exc:
        row["reason"] = str(exc)
    return row


def catalog() -> dict[str, Any]:
    """One document: verifiers, environments, task sources, backends, engines (and the sandbox tier)."""
    plugins = get_plugins()
    builders = {"verifiers": _verifier_row, "environments": _plain_row, "task_sources": _plain_row,
                "backends": _runnable_row, "engines": _runnable_row}
    doc: dict[str, Any] = {}
    for kind, build in builders.items():
        reg = plugins.registry(kind)
        doc[kind] = [build(e, reg) for e in reg]
    doc["sandbox"] = _sandbox_info()
    return doc


def _sandbox_info() -> dict[str, Any] | None:
    try:
        from crossgym import sandbox

        describe = getattr(sandbox, "describe", None)
        return describe() if describe is not None else None
    except Exception as exc:  # the listing must not die with the sandbox
        return {"error": f"{type(exc).__name__}: {exc}"}
