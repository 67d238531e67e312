"""The plugin manager: built-ins and entry-point plugins registered through the same hooks."""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pluggy

from crossgym.plugins import hookspecs
from crossgym.plugins.hookspecs import NAME
from crossgym.plugins.registry import KINDS, Registrar, Registry
from crossgym.protocol.errors import PluginError

log = logging.getLogger(__name__)

#: Built-in plugin modules, registered under these names (which CROSSGYM_DISABLE_PLUGINS can block too).
BUILTIN_PLUGINS = {
    "crossgym.verifiers": "crossgym.verifiers.plugin",
    "crossgym.environments": "crossgym.environments.plugin",
    "crossgym.adapters": "crossgym.adapters.plugin",
    "crossgym.inference": "crossgym.inference.plugin",
}
DISABLE_ENV = "CROSSGYM_DISABLE_PLUGINS"


@dataclass
class Plugins:
    """The loaded plugin manager and the five registries it filled."""

    pm: pluggy.PluginManager
    registries: dict[str, Registry]

    def registry(self, kind: str) -> Registry:
        return self.registries[kind]


_lock = threading.Lock()
_plugins: Plugins | None = None
_extra_plugins: list[object] = []


def disabled_plugins() -> set[str]:
    return {p.strip() for p in os.environ.get(DISABLE_ENV, "").split(",") if p.strip()}


def build_plugins(*, entry_points: bool = True, extra: list[object] | None = None) -> Plugins:
    """A fresh manager: built-ins, then entry points of group ``crossgym``, then ``extra`` plugin objects."""
    import importlib

    pm = pluggy.PluginManager(NAME)
    pm.add_hookspecs(hookspecs)
    blocked = disabled_plugins()
    for name in blocked:
        pm.set_blocked(name)
    for name, module in BUILTIN_PLUGINS.items():
        if name in blocked:
            continue
        pm.register(importlib.import_module(module), name=name)
    if entry_points:
        pm.load_setuptools_entrypoints(NAME)
    for obj in extra or ():
        pm.register(obj)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(f"a plugin implements an unknown hook: {exc}") from None

    dists = _plugin_dists(pm)
    registries = {kind: Registry(kind) for kind in KINDS}
    for kind in KINDS:
        caller = getattr(pm.hook, f"crossgym_register_{kind}")
        # call each implementation with a registrar bound to its distribution, so duplicates name both
        for impl in reversed(caller.get_hookimpls()):
            dist = dists.get(id(impl.plugin), impl.plugin_name)
            impl.function(registry=Registrar(registries[kind], dist))
    return Plugins(pm=pm, registries=registries)


def _plugin_dists(pm: pluggy.PluginManager) -> dict[int, str]:
    dists: dict[int, str] = {}
    for name, plugin in pm.list_name_plugin():
        if name in BUILTIN_PLUGINS:
            dists[id(plugin)] = "crossgym"
    for plugin, dist in pm.list_plugin_distinfo():
        dists[id(plugin)] = f"{dist.metadata['name']} {dist.version}"
    return dists


def get_plugins() -> Plugins:
    """The process-wide plugins, built on first use."""
    global _plugins
    if _plugins is None:
        with _lock:
            if _plugins is None:
                _plugins = build_plugins(extra=list(_extra_plugins))
    return _plugins


def reset_plugins(plugins: Plugins | None = None) -> None:
    """Drop (or replace) the cached plugins; tests use this after changing the environment."""
    global _plugins
    with _lock:
        _plugins = plugins
    from crossgym import api

    api.clear_caches()


def registry(kind: str) -> Registry:
    return get_plugins().registry(kind)


def register_plugin(obj: ModuleType | Any) -> None:
    """Register a plugin object in this process (notebooks, tests); the registries are rebuilt with it."""
    with _lock:
        _extra_plugins.append(obj)
    reset_plugins()


def unregister_plugin(obj: ModuleType | Any) -> None:
    with _lock:
        if obj in _extra_plugins:
            _extra_plugins.remove(obj)
    reset_plugins()
