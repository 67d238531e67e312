"""pluggy plugin system: hook specs, lazy registries, and the manager that loads built-ins and entry points."""

from crossgym.plugins.hookspecs import NAME, hookimpl, hookspec
from crossgym.plugins.manager import (
    build_plugins,
    get_plugins,
    register_plugin,
    registry,
    reset_plugins,
    unregister_plugin,
)
from crossgym.plugins.registry import KINDS, Entry, Registrar, Registry

__all__ = ["KINDS", "NAME", "Entry", "Registrar", "Registry", "build_plugins", "get_plugins", "hookimpl",
           "hookspec", "register_plugin", "registry", "reset_plugins", "unregister_plugin"]
