"""Each verifier-conformance check passes a well-behaved verifier and catches the one rule a fake breaks."""

from __future__ import annotations

import json

import pytest

from crossgym.compat_tests import verifier_checks as vc


def test_well_behaved_verifier_passes_every_check(fakes: object) -> None:
    results = vc.conformance("fake_contains", None, garbage_tasks=1)
    assert {k: r.status for k, r in results.items()} == {
        "examples": "pass", "determinism": "pass", "garbage": "pass", "timeout": "pass",
        "frozen": "skip", "fresh_process": "pass"}
    assert results["garbage"].checked > 50  # every garbage entry, raw ones included
    assert results["garbage"].extra["verdicts"]["malformed"] > 0


def test_examples_check_reports_the_wrong_declaration(fakes: object) -> None:
    res = vc.check_examples("fake_wrong_examples")
    assert res.status == "fail"
    assert "lacks a malformed case" in res.detail
    res2 = vc.check_examples("fake_wrong_examples")
    assert res2.failure is None or res2.failure["sample"].startswith("example:")


def test_examples_check_names_the_first_mismatching_example(fakes: object, monkeypatch: pytest.MonkeyPatch) -> None:
    import compat_fakes

    good = compat_fakes.Contains.examples()
    monkeypatch.setattr(compat_fakes.WrongExamples, "examples",
                        classmethod(lambda cls: [*good[:3], cls.example("42", "It is 7.", "pass")]))
    res = vc.check_examples("fake_wrong_examples")
    assert res.status == "fail"
    assert res.failure == {**res.failure, "expected": "pass", "got": "fail", "completion": "It is 7."}


def test_determinism_check_catches_a_flaky_verifier(fakes: object) -> None:
    res = vc.check_determinism("fake_flaky")
    assert res.status == "fail"
    assert res.failure["first"]["reward"] != res.failure["second"]["reward"]


def test_garbage_check_catches_a_verifier_that_raises(fakes: object) -> None:
    garbage, _ = vc.check_garbage_and_timeout("fake_raises", tasks=1)
    assert garbage.status == "fail"
    assert "raised" in garbage.detail


def test_timeout_check_catches_an_ignored_timeout(fakes: object) -> None:
    garbage, timeout = vc.check_garbage_and_timeout("fake_slow", timeout=0.2, grace=0.5, tasks=2)
    assert garbage.status == "pass"
    assert timeout.status == "fail"
    assert timeout.failure["sample"] == "garbage:redos-a-bang@task0"
    assert timeout.extra["not_rescored"] == 1  # the slow entry is not scored again on the second task


def test_fresh_process_check_catches_process_local_state(fakes: object, monkeypatch: pytest.MonkeyPatch) -> None:
    import compat_fakes

    assert vc.check_fresh_process("fake_process_local").status == "pass"
    monkeypatch.setitem(compat_fakes.PROCESS_LOCAL, "bonus", 0.25)
    res = vc.check_fresh_process("fake_process_local")
    assert res.status == "fail"
    assert res.failure["here"]["reward"] != res.failure["fresh"]["reward"]


def _freeze(tmp_path, name: str, version: str, reward: float):  # type: ignore[no-untyped-def]
    import compat_fakes

    ex = compat_fakes.Contains.examples()[0]
    rec = {"id": "r0", "note": "", "task": ex.task.to_dict(), "completion": ex.completion.to_dict(),
           "reference": {"version": version, "reward": reward, "passed": True, "error": None}}
    (tmp_path / "verifiers").mkdir()
    (tmp_path / "verifiers" / f"{name}.jsonl").write_text(json.dumps(rec) + "\n")
    return tmp_path


def test_frozen_check_catches_a_scoring_change_without_a_version_bump(fakes: object, tmp_path) -> None:  # type: ignore[no-untyped-def]
    res = vc.check_frozen("fake_contains", _freeze(tmp_path, "fake_contains", "1", 0.75))
    assert res.status == "fail"
    assert "without a version bump" in res.detail


def test_frozen_check_accepts_a_bumped_version(fakes: object, tmp_path) -> None:  # type: ignore[no-untyped-def]
    res = vc.check_frozen("fake_contains", _freeze(tmp_path, "fake_contains", "0", 0.75))
    assert res.status == "skip"
    assert res.extra["other_version"] == 1


def test_unavailable_reason_names_the_fix() -> None:
    from crossgym.plugins import registry

    if "judge" not in registry("verifiers"):
        pytest.skip("no judge verifier registered")
    why = vc.unavailable_reason("judge")
    assert why is None or "fix" in why or "CROSSGYM_JUDGE" in why
