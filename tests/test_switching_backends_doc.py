"""docs/guides/switching-backends.md: every cell of the side-by-side table is what `crossgym plan` gives."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from crossgym.config import load_run_config
from crossgym.train import plan_documents

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs/guides/switching-backends.md"
COLUMNS = ["trl", "unsloth", "verl", "openrlhf", "skyrl"]
CELL = re.compile(r"`([^`=]+?) = ([^`]+)`")


def _table_rows() -> list[list[str]]:
    rows = []
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        if line.startswith("| `") and line.count("|") >= 6 and "| TRL |" not in line:
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def _lookup(native: dict[str, Any], key: str) -> Any:
    """Resolve ``Section.key`` (TRL, Unsloth, OpenRLHF reward_config, SkyRL env_config) or a flat veRL/OpenRLHF/SkyRL
    key."""
    for section in sorted(native, key=len, reverse=True):
        if key.startswith(section + ".") and isinstance(native[section], dict):
            rest = key[len(section) + 1:]
            if rest in native[section]:
                return native[section][rest]
    for flat in ("hydra_overrides", "flags", "overrides"):
        if key in native.get(flat, {}):
            return native[flat][key]
    raise KeyError(key)


def _parse(value: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    run = load_run_config(ROOT / "examples/single_turn.yaml")
    run = run.model_copy(update={"output_dir": str(tmp_path_factory.mktemp("plans"))})
    return {doc["backend"]: doc["native_config"] for doc in plan_documents(run, COLUMNS)}


def test_table_matches_every_backend_plan(plans: dict[str, dict[str, Any]]) -> None:
    rows = _table_rows()
    assert len(rows) >= 10, "the side-by-side table was not found"
    checked = 0
    for row in rows:
        field, cells = row[0], row[1:]
        assert len(cells) == len(COLUMNS), row
        for backend, cell in zip(COLUMNS, cells, strict=True):
            pairs = CELL.findall(cell)
            assert pairs, f"{field} / {backend}: no `key = value` in {cell!r}"
            for key, value in pairs:
                actual = _lookup(plans[backend], key)
                assert actual == _parse(value), f"{field} / {backend}: {key} is {actual!r} in the plan, not {value}"
                checked += 1
    assert checked >= 40
