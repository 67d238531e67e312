"""Registries: lazy import, duplicates naming both distributions, install hints, disabling plugins."""

from __future__ import annotations

import sys
import types

import pytest

from crossgym.plugins import Entry, Registrar, Registry, build_plugins, hookimpl
from crossgym.protocol.errors import BackendUnavailable, PluginError, UnknownNameError


def _module(name: str, **attrs: object) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    return mod


def test_targets_import_on_first_use_only(monkeypatch: pytest.MonkeyPatch) -> None:
    reg = Registry("verifiers")
    Registrar(reg, "demo-dist").add("lazy", "crossgym_test_lazy_mod:Thing")
    assert "crossgym_test_lazy_mod" not in sys.modules  # registering imported nothing
    monkeypatch.setitem(sys.modules, "crossgym_test_lazy_mod", _module("crossgym_test_lazy_mod", Thing=42))
    assert reg.load("lazy") == 42


def test_duplicate_names_both_distributions() -> None:
    reg = Registry("verifiers")
    Registrar(reg, "alpha 1.0").add("same", "a:A")
    with pytest.raises(PluginError) as info:
        Registrar(reg, "beta 2.0").add("same", "b:B")
    assert "alpha 1.0" in str(info.value) and "beta 2.0" in str(info.value)


def test_unknown_name_suggests_the_closest() -> None:
    reg = Registry("verifiers")
    Registrar(reg, "x").add("exact_match", "a:A")
    with pytest.raises(UnknownNameError, match="did you mean 'exact_match'"):
        reg.entry("exact_mach")


def test_missing_dependency_gives_install_command() -> None:
    reg = Registry("backends")
    Registrar(reg, "x").add("ghost", "crossgym_no_such_module_xyz.backend:B",
                            install="pip install crossgym-ghost", requires=("crossgym_no_such_module_xyz",))
    entry = reg.entry("ghost")
    assert entry.missing_requirements() == ["crossgym_no_such_module_xyz"]
    with pytest.raises(BackendUnavailable) as info:
        reg.load("ghost")
    assert info.value.install == "pip install crossgym-ghost"
    assert "pip install crossgym-ghost" in str(info.value)


def test_bad_target_is_a_plugin_error() -> None:
    reg = Registry("verifiers")
    with pytest.raises(PluginError, match="module:attr"):
        Registrar(reg, "x").add("v", "no_colon_here")
    Registrar(reg, "x").add("w", "crossgym.api:no_such_attribute")
    with pytest.raises(PluginError, match="no attribute"):
        reg.load("w")


class _ExtraPlugin:
    @hookimpl
    def crossgym_register_verifiers(self, registry: Registrar) -> None:
        registry.add("extra_verifier", "crossgym.api:load_verifier", description="test plugin")


def test_builtins_and_extra_plugins_register_through_hooks() -> None:
    plugins = build_plugins(entry_points=False, extra=[_ExtraPlugin()])
    entry: Entry = plugins.registry("verifiers").entry("extra_verifier")
    assert entry.description == "test plugin"
    assert {"trl", "unsloth", "verl", "openrlhf"} <= set(plugins.registry("backends").names())
    assert {"hf", "vllm", "sglang", "openai"} <= set(plugins.registry("engines").names())
    assert plugins.registry("backends").entry("trl").dist == "crossgym"


def test_misspelt_hook_fails_loudly() -> None:
    class Misspelt:
        @hookimpl
        def crossgym_register_verifier(self, registry: Registrar) -> None:  # missing "s"
            pass

    with pytest.raises(PluginError, match="unknown hook"):
        build_plugins(entry_points=False, extra=[Misspelt()])


def test_disable_builtin_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CROSSGYM_DISABLE_PLUGINS", "crossgym.adapters, other")
    plugins = build_plugins(entry_points=False)
    assert plugins.registry("backends").names() == []
    assert "hf" in plugins.registry("engines")


def test_register_plugin_rebuilds_process_registries(fresh_plugins: None) -> None:
    from crossgym.plugins import register_plugin, registry, unregister_plugin

    plugin = _ExtraPlugin()
    register_plugin(plugin)
    try:
        assert "extra_verifier" in registry("verifiers")
    finally:
        unregister_plugin(plugin)
    assert "extra_verifier" not in registry("verifiers")
