"""The consistency checks: recorded rollouts re-score with zero drift, serve routes equal native files, NeMo Gym's
shape equals the scoring core (each would have failed on crossgym 0.1)."""

from __future__ import annotations

import json

import pytest

from crossgym.compat_tests.consistency import check_nemo_gym, check_records, check_route, samples


def test_samples_cover_pass_fail_malformed_and_a_surrogate():
    from crossgym.api import verify

    tasks, comps = samples(surrogate=True)
    verdicts = [verify(t, c) for t, c in zip(tasks, comps, strict=True)]
    assert any(v.passed for v in verdicts) and any(not v.passed and v.error is None for v in verdicts)
    assert any(v.error_kind == "malformed" for v in verdicts)
    assert any("\udcff" in c.text for c in comps)


def test_trl_records_re_score_with_zero_drift(tiny_model_dir, monkeypatch):
    from crossgym.adapters.trl import parity

    monkeypatch.setenv(parity.MODEL_ENV, str(tiny_model_dir))
    res = check_records(parity, "trl")
    assert res.status == "pass", res.to_dict()
    assert res.checked == len(samples()[0])


def test_records_fail_when_the_recorded_verdict_drifts(tmp_path):
    """The check is not a tautology: a recording path that stores a verdict other than the verifier's fails."""
    from crossgym.protocol import Verdict
    from crossgym.scoring import Provenance, append_records, rollout_record

    class Drifting:
        @staticmethod
        def record_rollouts(tasks, completions, path):  # type: ignore[no-untyped-def]
            append_records(path, [rollout_record(t, c, Verdict.ok(0.123), provenance=Provenance.new(
                t.verifier, None, source="train", backend="fake")) for t, c in zip(tasks, completions, strict=True)])

    res = check_records(Drifting, "fake")
    assert res.status == "fail" and "drift" in res.detail


def test_a_driver_without_hooks_is_skipped_with_a_reason():
    class Bare:
        pass

    assert check_records(Bare, "x").status == "skip" and check_route(Bare).status == "skip"


def test_nemo_gym_route_equals_the_scoring_core():
    pytest.importorskip("fastapi")
    res = check_nemo_gym()
    assert res.status == "pass", res.to_dict()


def test_serve_json_survives_a_lone_surrogate():
    from crossgym.serve import jsonio

    doc = {"reason": "bad \ud800 text", "n": 1}
    raw = jsonio.dumps(doc)
    raw.decode("utf-8")
    assert json.loads(raw) == doc
