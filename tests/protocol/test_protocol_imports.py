"""protocol/ is the contract alone: importing it loads no pydantic, no YAML and nothing of crossgym outside
protocol/, while the names 0.1 code imports from it (RunConfig, load_run_config) still resolve."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest


def test_import_protocol_loads_only_protocol_and_stdlib() -> None:
    code = ("import sys, crossgym.protocol, crossgym.protocol.config; "
            "print(sorted(m for m in sys.modules if m.startswith('crossgym') and m != 'crossgym' "
            "and not m.startswith('crossgym.protocol')), 'pydantic' in sys.modules, 'yaml' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.strip() == "[] False False"


def test_runconfig_names_resolve_from_crossgym_config() -> None:
    import crossgym.config as config
    import crossgym.protocol as protocol
    from crossgym.protocol import RunConfig, load_run_config

    assert RunConfig is config.RunConfig and load_run_config is config.load_run_config
    assert protocol.RunConfig is config.run.RunConfig
    with pytest.raises(AttributeError, match="parse_tool_calls"):
        protocol.parse_tool_calls  # noqa: B018  # moved to crossgym.text, not re-exported here


def test_protocol_config_shim_warns_and_reexports() -> None:
    import crossgym.config as config

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from crossgym.protocol.config import GRPOConfig, RunConfig
    assert RunConfig is config.RunConfig and GRPOConfig is config.GRPOConfig
    assert [str(w.message) for w in caught if w.category is DeprecationWarning] == [
        "crossgym.protocol.config is deprecated: import GRPOConfig from crossgym.config",
        "crossgym.protocol.config is deprecated: import RunConfig from crossgym.config",
    ]
    assert all(w.filename == __file__ for w in caught)
    import crossgym.protocol.config as shim

    with pytest.raises(AttributeError, match="nope"):
        shim.nope  # noqa: B018


def test_parsing_moved_to_crossgym_text() -> None:
    from crossgym.text import parse_tool_calls

    assert [c.name for c in parse_tool_calls('<tool_call>{"name": "f", "arguments": {}}</tool_call>')] == ["f"]
    with pytest.raises(ModuleNotFoundError):
        __import__("crossgym.protocol.parsing")
