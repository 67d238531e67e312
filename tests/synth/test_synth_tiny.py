"""synth with a real (tiny, untrained) model through the hf engine and the CLI: its junk is rejected, with reasons."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crossgym.api import load_tasks
from crossgym.synth import synthesize
from crossgym.synth.filter import REASONS


@pytest.fixture(scope="module")
def hf(tiny_model_dir: Path):  # type: ignore[no-untyped-def]
    from crossgym.inference.hf import HFEngine

    return HFEngine(tiny_model_dir).load()


def test_tiny_model_junk_is_rejected_with_reasons(hf) -> None:  # type: ignore[no-untyped-def]
    from crossgym.protocol import SamplingParams

    seeds = load_tasks("arithmetic", n=5, seed=0)
    res = synthesize("arithmetic", seeds, hf, n=2, max_attempts=4, batch_size=4, seed=0,
                     params=SamplingParams(temperature=1.0, max_tokens=48, seed=0))
    assert res.tasks == [] and res.attempts == 4 and len(res.rejects) == 4
    for r in res.rejects:
        assert r["reason"] in REASONS and r["detail"] and isinstance(r["output"], str)
        assert len(r["prompt_sha256"]) == 64 and len(r["seed_ids"]) == 3
    assert res.run["engine"] == "hf" and res.run["model"] == str(hf.model_name)
    assert res.run["verifier"]["name"] == "numeric" and res.run["sampling"]["max_tokens"] == 48


def test_cli_writes_tasks_rejects_and_summary(tiny_model_dir: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    from crossgym.cli import main

    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text("".join(t.to_json() + "\n" for t in load_tasks("word_problems", n=4, seed=2)), encoding="utf-8")
    out = tmp_path / "out" / "synth.jsonl"
    with pytest.raises(SystemExit) as exc:
        main(["synth", "word_problems", "--seeds", str(seeds), "--engine", "hf", "--model", str(tiny_model_dir),
              "-n", "1", "--max-attempts", "2", "--max-tokens", "32", "--shots", "2", "--out", str(out), "--json"])
    assert exc.value.code == 1  # kept none: not a success, though every file is written
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert captured.err.strip().splitlines()[-1].startswith("crossgym: synth word_problems: kept no task of 2 drafts")
    assert out.read_text() == ""  # nothing the tiny model wrote survived the verifier
    rejects = [json.loads(line) for line in (tmp_path / "out" / "synth.rejects.jsonl").read_text().splitlines()]
    assert len(rejects) == 2 and all(r["reason"] in REASONS for r in rejects)
    assert summary == json.loads((tmp_path / "out" / "synth.summary.json").read_text())
    assert summary["counts"]["attempts"] == 2 and summary["counts"]["kept"] == 0
    assert summary["family"] == "word_problems" and summary["engine"] == "hf" and summary["shots"] == 2
    assert set(summary["reasons"]) == {r["reason"] for r in rejects}


def test_cli_user_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from crossgym.cli import main

    for argv, words in [(["no_such_family"], "no task source 'no_such_family'"),
                        (["arithmetic", "--seeds", str(tmp_path / "missing.jsonl")], "no seed file"),
                        (["arithmetic", "-n", "0"], "-n: must be in 1..1000000")]:
        with pytest.raises(SystemExit) as exc:
            main(["synth", *argv, *([] if "-n" in argv else ["-n", "1"]), "--out", str(tmp_path / "o.jsonl")])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1
