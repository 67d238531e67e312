"""`crossgym reverify`: stored rollouts re-scored with today's verifiers; drift reported."""

from __future__ import annotations

import json

import pytest

from crossgym.cli import main
from crossgym.eval.reverify import reverify
from crossgym.plugins import hookimpl, register_plugin, unregister_plugin
from crossgym.protocol import Completion, Rollout, Task, VerifierSpec
from crossgym.rollout.store import RolloutStore


def _store(path, texts, verifier="test_first_letter"):  # type: ignore[no-untyped-def]
    from crossgym.api import load_verifier

    v = load_verifier(verifier)
    rollouts = []
    for i, text in enumerate(texts):
        task = Task(id=f"t{i}", prompt="p", answer=None, verifier=VerifierSpec(verifier))
        c = Completion.from_text(text)
        rollouts.append(Rollout(task=task, completion=c, verdict=v.verify(task, c),
                                provenance={"key": f"t{i}#0@h", "verifier": {"name": verifier, "version": "1",
                                                                            "params": {}}}))
    with RolloutStore(path) as store:
        store.append(rollouts)
    return path


def test_no_drift_when_nothing_changed(test_plugin, tmp_path, capsys):
    path = _store(tmp_path / "r.jsonl", ["abc", "7up", "x"])
    doc = reverify(path)
    assert doc["ok"] and doc["checked"] == 3 and doc["changed"] == 0
    assert doc["by_verifier"]["test_first_letter"]["version_changed"] is False
    with pytest.raises(SystemExit) as e:
        main(["reverify", str(path)])
    assert e.value.code == 0 and "0 changed" in capsys.readouterr().out


def test_a_scoring_change_is_reported_as_drift(test_plugin, tmp_path, capsys):
    path = _store(tmp_path / "r.jsonl", ["abc", "7up", "x", "9"])

    class V2Plugin:
        @hookimpl
        def crossgym_register_verifiers(self, registry):  # type: ignore[no-untyped-def]
            registry.add("test_first_letter", "fixtures_plugin:FirstLetterV2")

    unregister_plugin(next(p for p in _registered() if type(p).__name__ == "Plugin"))  # drop the v1 registration
    v2 = V2Plugin()
    register_plugin(v2)
    try:
        doc = reverify(path)
        assert not doc["ok"] and doc["changed"] == 2
        g = doc["by_verifier"]["test_first_letter"]
        assert g["old_versions"] == ["1"] and g["current_version"] == "2" and g["version_changed"]
        assert g["mean_old"] == pytest.approx(0.5) and g["mean_new"] == pytest.approx(1.0)
        assert {c["task"] for c in doc["changes"]} == {"t1", "t3"}
        assert reverify(path, chunk=1) == reverify(path, chunk=3) == doc  # streamed in chunks: the same report
        import crossgym.scoring.drift as drift

        listed = drift.MAX_LISTED
        drift.MAX_LISTED = 1
        try:
            capped = reverify(path, chunk=1)
        finally:
            drift.MAX_LISTED = listed
        assert capped["changed"] == 2 and [c["task"] for c in capped["changes"]] == ["t1"]
        with pytest.raises(SystemExit) as e:
            main(["reverify", str(path), "--json"])
        assert e.value.code == 1 and json.loads(capsys.readouterr().out)["changed"] == 2
    finally:
        unregister_plugin(v2)


def test_missing_verifier_and_missing_file(test_plugin, tmp_path, capsys):
    path = _store(tmp_path / "r.jsonl", ["abc"])
    text = path.read_text().replace("test_first_letter", "gone_verifier")
    path.write_text(text)
    doc = reverify(path)
    assert not doc["ok"] and "gone_verifier" in doc["unavailable"] and doc["checked"] == 0
    with pytest.raises(SystemExit) as e:
        main(["reverify", str(tmp_path / "nope.jsonl")])
    assert e.value.code == 2 and "rollout file not found" in capsys.readouterr().err


def _registered():  # type: ignore[no-untyped-def]
    from crossgym.plugins import manager

    return list(manager._extra_plugins)
