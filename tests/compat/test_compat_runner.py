"""`crossgym compat`: one JSON document on stdout, the documented schema, --out/--html, exit codes; merging the
matrices of several venvs (python -m crossgym.compat_tests.merge)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crossgym.cli import app
from crossgym.compat_tests import merge as merge_cli
from crossgym.compat_tests.matrix import JSON_SCHEMA, merge

ARGS = ["compat", "--backend", "fake_exact", "--backend", "fake_float32", "--backend", "fake_missing",
        "--backend", "fake_nodriver", "--verifier", "fake_contains", "--verifier", "exact_match",
        "--checks", "parity,plans"]


@pytest.fixture(scope="module")
def compat_run(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    import compat_fakes

    from crossgym.plugins import register_plugin, unregister_plugin

    tmp = tmp_path_factory.mktemp("compat")
    register_plugin(compat_fakes)
    try:
        result = CliRunner().invoke(app, [*ARGS, "--json", "--out", str(tmp / "m.json"), "--html",
                                          str(tmp / "m.html")])
    finally:
        unregister_plugin(compat_fakes)
    return result, tmp


def test_json_is_one_document_in_the_documented_schema(compat_run) -> None:  # type: ignore[no-untyped-def]
    import jsonschema

    result, tmp = compat_run
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, JSON_SCHEMA)
    assert json.loads((tmp / "m.json").read_text()) == doc
    assert "<table>" in (tmp / "m.html").read_text()


def test_matrix_cells_say_pass_mismatch_and_not_installed(compat_run) -> None:  # type: ignore[no-untyped-def]
    result, _ = compat_run
    doc = json.loads(result.stdout)
    row = doc["matrix"]["fake_contains"]
    assert row["fake_exact"]["status"] == "pass" and set(row["fake_exact"]["modes"]) == {"single_turn", "multi_turn"}
    assert row["fake_float32"]["status"] == "mismatch"
    assert row["fake_float32"]["first_mismatch"]["expected"] == 0.3
    assert "float32" in row["fake_float32"]["first_mismatch"]["why"]
    assert row["fake_missing"] == {**row["fake_missing"], "status": "not_installed",
                                   "install": "pip install fake-missing-rl"}
    assert row["fake_nodriver"]["status"] == "no_driver"
    assert doc["matrix"]["exact_match"]["fake_float32"]["status"] == "pass"  # 0 and 1 survive float32


def test_plans_are_parsed_and_undeclared_variants_refused(compat_run) -> None:  # type: ignore[no-untyped-def]
    result, _ = compat_run
    plans = json.loads(result.stdout)["backends"]["fake_exact"]["plans"]
    assert plans["default"]["status"] == "pass"
    assert plans["variant_dapo"]["status"] == "pass" and "refused as declared" in plans["variant_dapo"]["detail"]


def test_a_mismatch_exits_1(compat_run) -> None:  # type: ignore[no-untyped-def]
    result, _ = compat_run
    assert result.exit_code == 1
    assert json.loads(result.stdout)["summary"]["ok"] is False


def test_unknown_names_are_one_line_errors() -> None:
    result = CliRunner().invoke(app, ["compat", "--verifier", "exact_matc", "--checks", "parity"])
    assert result.exit_code != 0
    assert "exact_match" in str(result.exception)
    bad = CliRunner().invoke(app, ["compat", "--checks", "parity,nope"])
    assert "unknown check" in str(bad.exception)


def _venv_docs(doc: dict) -> tuple[dict, dict]:  # type: ignore[type-arg]
    """The same run seen from two venvs: in one fake_float32 is not installed, in the other fake_exact."""
    a, b = json.loads(json.dumps(doc)), json.loads(json.dumps(doc))
    for row in a["matrix"].values():
        row["fake_float32"] = {"status": "not_installed", "install": "pip install f32"}
    a["backends"]["fake_float32"] = {"status": "not_installed", "install": "pip install f32", "reason": "missing"}
    for row in b["matrix"].values():
        row["fake_exact"] = {"status": "not_installed", "install": "pip install exact"}
    b["backends"]["fake_exact"] = {"status": "not_installed", "install": "pip install exact", "reason": "missing"}
    return a, b


def test_merge_keeps_measured_cells_and_the_worst_result(compat_run) -> None:  # type: ignore[no-untyped-def]
    import jsonschema

    result, _ = compat_run
    a, b = _venv_docs(json.loads(result.stdout))
    merged = merge([a, b])
    jsonschema.validate(merged, JSON_SCHEMA)
    row = merged["matrix"]["fake_contains"]
    assert row["fake_exact"]["status"] == "pass" and row["fake_exact"]["run"] == 0
    assert row["fake_float32"]["status"] == "mismatch" and row["fake_float32"]["run"] == 1
    assert merged["backends"]["fake_exact"]["status"] == merged["backends"]["fake_float32"]["status"] == "installed"
    assert len(merged["runs"]) == 2 and merged["summary"]["ok"] is False
    b["matrix"]["exact_match"]["fake_exact"] = {"status": "mismatch", "mismatches": 1}
    assert merge([a, b])["matrix"]["exact_match"]["fake_exact"]["status"] == "mismatch"  # worst measured wins


def test_merge_command_writes_json_and_html(compat_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result, _ = compat_run
    a, b = _venv_docs(json.loads(result.stdout))
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    rc = merge_cli.main([str(tmp_path / "a.json"), str(tmp_path / "b.json"), "-o", str(tmp_path / "m.json"),
                         "--html", str(tmp_path / "m.html"), "--quiet"])
    assert rc == 1  # the float32 mismatch is in the merged matrix
    assert json.loads((tmp_path / "m.json").read_text())["matrix"]["fake_contains"]["fake_float32"]["status"] \
        == "mismatch"
    assert "First differing sample" in (tmp_path / "m.html").read_text()
    (tmp_path / "bad.json").write_text("{not json")
    assert merge_cli.main([str(tmp_path / "bad.json"), "-o", str(tmp_path / "x.json")]) == 2
