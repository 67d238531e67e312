"""Registries of named, lazily imported plugin objects (verifiers, environments, sources, backends, engines)."""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from crossgym.protocol.errors import BackendUnavailable, PluginError, UnknownNameError

KINDS = ("verifiers", "environments", "task_sources", "backends", "engines")


@dataclass(frozen=True)
class Entry:
    """One registered name: where to import it from, who registered it, and how to install what it needs."""

    name: str
    target: str
    dist: str
    description: str = ""
    install: str | None = None
    requires: tuple[str, ...] = ()
    capabilities: dict[str, Any] = field(default_factory=dict)

    def missing_requirements(self) -> list[str]:
        """Top-level modules in ``requires`` that cannot be found (checked without importing them)."""
        missing = []
        for mod in self.requires:
            try:
                if importlib.util.find_spec(mod) is None:
                    missing.append(mod)
            except (ImportError, ValueError):
                missing.append(mod)
        return missing


class Registry:
    """Names to entries for one kind; imports each target on first use and caches it."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Entry] = {}
        self._loaded: dict[str, Any] = {}
        self._lock = threading.Lock()

    def add(self, entry: Entry) -> None:
        old = self._entries.get(entry.name)
        if old is not None:
            raise PluginError(
                f"duplicate {self.kind[:-1].replace('_', ' ')} name {entry.name!r}: registered by distribution "
                f"{old.dist!r} ({old.target}) and by {entry.dist!r} ({entry.target}); rename one, or disable a "
                f"plugin with CROSSGYM_DISABLE_PLUGINS")
        if ":" not in entry.target:
            raise PluginError(f"{self.kind} entry {entry.name!r} from {entry.dist!r}: target {entry.target!r} "
                              "must be 'module:attr'")
        self._entries[entry.name] = entry

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[Entry]:
        return iter(sorted(self._entries.values(), key=lambda e: e.name))

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def entry(self, name: str) -> Entry:
        try:
            return self._entries[name]
        except KeyError:
            close = difflib.get_close_matches(name, list(self._entries), n=1)
            hint = f"did you mean {close[0]!r}?" if close else "run `crossgym list` to see what is registered"
            kind = self.kind[:-1].replace("_", " ")
            raise UnknownNameError(f"unknown {kind} {name!r}", fix=hint) from None

    def load(self, name: str) -> Any:
        """The registered object (class or factory), imported on first use."""
        if name in self._loaded:
            return self._loaded[name]
        entry = self.entry(name)
        with self._lock:
            if name not in self._loaded:
                self._loaded[name] = _import_target(entry)
        return self._loaded[name]


def _import_target(entry: Entry) -> Any:
    module_name, _, attr = entry.target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        missing = entry.missing_requirements()
        if missing or entry.install:
            raise BackendUnavailable(entry.name, f"cannot import {exc.name or module_name}", entry.install) from exc
        raise PluginError(f"{entry.name!r} from {entry.dist!r}: cannot import {module_name}: {exc}") from exc
    obj: Any = module
    try:
        for part in attr.split("."):
            obj = getattr(obj, part)
    except AttributeError:
        raise PluginError(f"{entry.name!r} from {entry.dist!r}: {module_name} has no attribute {attr!r}") from None
    return obj


class Registrar:
    """What a hook receives: adds entries to one registry on behalf of one distribution."""

    def __init__(self, registry: Registry, dist: str) -> None:
        self._registry = registry
        self.dist = dist

    @property
    def kind(self) -> str:
        return self._registry.kind

    def add(self, name: str, target: str, *, description: str = "", install: str | None = None,
            requires: tuple[str, ...] | list[str] = (), capabilities: dict[str, Any] | None = None) -> None:
        """Register ``name`` -> ``"module:attr"``; ``requires`` lists modules checked without importing."""
        if not isinstance(name, str) or not name:
            raise PluginError(f"{self.dist!r} registered a {self.kind} entry with an empty name")
        self._registry.add(Entry(name=name, target=target, dist=self.dist, description=description,
                                 install=install, requires=tuple(requires), capabilities=dict(capabilities or {})))
