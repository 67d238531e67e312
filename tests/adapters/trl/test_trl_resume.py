"""Training that survives a kill (issue 28): a real SIGKILL of `crossgym train` after a checkpoint, `--resume`, and the
run ends where an uninterrupted one does: the same optimizer steps, every step's metrics and rollouts exactly once,
the same final weights. And the resumes that must be refused are, in one line naming the field."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from crossgym.cli import main
from crossgym.protocol import Message, Task, VerifierSpec

pytest.importorskip("trl")

MAX_STEPS = 6
SAVE_STEPS = 2


def _cli(argv, capsys):
    code = 0
    try:
        main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out, err = capsys.readouterr()
    return code, out, err


def _config(tmp_path: Path, model: str, name: str, **over) -> Path:
    """16 answer-free tasks scored by `length` (rewards spread on a random model): 8 steps of 2 prompts x 2
    generations per data epoch, so 6 steps stay in one epoch (see test_a_sigkilled_run...)."""
    spec = VerifierSpec("length", {"max": 6, "unit": "chars", "mode": "linear", "slack": 1.0})
    tasks = tmp_path / "tasks.jsonl"
    if not tasks.exists():
        tasks.write_text("".join(Task(id=f"hi-{i}", prompt=[Message("user", f"Say hi to {i}.")], answer=None,
                                      verifier=spec).to_json() + "\n" for i in range(16)), encoding="utf-8")
    grpo = {"num_generations": 2, "per_device_train_batch_size": 4, "max_completion_length": 8,
            "max_steps": MAX_STEPS, "save_steps": SAVE_STEPS, "learning_rate": 1e-3}
    grpo.update(over.pop("grpo", {}))
    data = {"model": model, "tasks": {"files": [str(tasks)]}, "output_dir": str(tmp_path / name), "seed": 0,
            "grpo": grpo, **over}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _complete_rows(path: Path) -> list[dict]:
    """The rows of a file another process is writing: whole lines only."""
    if not path.is_file():
        return []
    rows = []
    for line in path.read_bytes().split(b"\n")[:-1]:
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def _weights(folder: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def _kill_after_a_checkpoint(cfg: Path, out: Path) -> int:
    """Run `crossgym train` in its own process group and SIGKILL it once a checkpoint is complete and a later step
    is logged (so the kill leaves records after the checkpoint). Returns the checkpoint's step."""
    from crossgym.adapters.trl.checkpoints import latest

    env = dict(os.environ, OMP_NUM_THREADS="1")
    log = (out.parent / "killed.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "crossgym.cli", "train", str(cfg), "--skip-gate"],
                            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    metrics = out / "metrics.jsonl"
    deadline = time.monotonic() + 240
    try:
        while True:
            assert time.monotonic() < deadline, "no checkpoint within 240 s"
            assert proc.poll() is None, (out.parent / "killed.log").read_text()[-3000:]
            found = latest(out)
            steps = [r["step"] for r in _complete_rows(metrics) if "reward" in r]
            if found is not None and steps and found[0] < max(steps) < MAX_STEPS:
                os.killpg(proc.pid, signal.SIGKILL)  # only the child's own group
                break
            time.sleep(0.02)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
    assert proc.returncode == -signal.SIGKILL
    found = latest(out)  # a kill mid-save leaves a newer incomplete folder; the finder passes over it
    assert found is not None
    return found[0]


def test_a_sigkilled_run_resumes_to_the_same_weights(tiny_model_dir, tmp_path, capsys):
    """TRL restores what decides the next step (weights, optimizer, scheduler, the Python/NumPy/torch RNG, the
    step, the position in the data epoch), so the resumed run's weights are the uninterrupted run's (bitwise, on
    CPU). A resume in a later epoch: test_a_resume_in_a_later_data_epoch_keeps_the_prompt_order."""
    killed, ref = tmp_path / "killed", tmp_path / "ref"
    cfg = _config(tmp_path, str(tiny_model_dir), "killed")
    ckpt_step = _kill_after_a_checkpoint(cfg, killed)
    before = _rows(killed / "metrics.jsonl")
    assert any(r["step"] > ckpt_step for r in before), "the kill left no records after the checkpoint"
    # a kill in the middle of a write leaves a torn last line
    for name in ("metrics.jsonl", "rollouts.jsonl"):
        with (killed / name).open("ab") as fh:
            fh.write(b'{"step": 5, "provenance": {"step": 4}, "torn')

    code, out, err = _cli(["train", str(cfg), "--resume"], capsys)
    assert code == 0, err
    err = " ".join(err.split())
    assert f"resuming from {killed / f'checkpoint-{ckpt_step}'} at step {ckpt_step} of {MAX_STEPS}" in err
    assert "run segment 2" in err and "eval gate not run again" in err and "gate passed" not in err
    assert f"trained {MAX_STEPS} steps" in out
    assert f"resumed from step {ckpt_step} ({killed / f'checkpoint-{ckpt_step}'}); this was run segment 2" in out

    code, _, err = _cli(["train", str(_config(tmp_path, str(tiny_model_dir), "ref")), "--skip-gate"], capsys)
    assert code == 0, err

    # metrics: every step exactly once, each row from the segment that ran the step; the curve is continuous
    rows = [r for r in _rows(killed / "metrics.jsonl") if "reward" in r]
    assert [r["step"] for r in rows] == list(range(1, MAX_STEPS + 1))
    assert [r["segment"] for r in rows] == [1 if r["step"] <= ckpt_step else 2 for r in rows]
    ref_rows = [r for r in _rows(ref / "metrics.jsonl") if "reward" in r]
    assert [r["reward"] for r in rows] == pytest.approx([r["reward"] for r in ref_rows], abs=1e-6)
    # rollouts: as many per step as the uninterrupted run, none twice, none torn
    got = [json.loads(line) for line in (killed / "rollouts.jsonl").read_bytes().split(b"\n") if line]
    want = [json.loads(line) for line in (ref / "rollouts.jsonl").read_bytes().split(b"\n") if line]
    assert Counter(d["provenance"]["step"] for d in got) == Counter(d["provenance"]["step"] for d in want)
    assert {d["provenance"]["segment"] for d in got if d["provenance"]["step"] >= ckpt_step} == {2}
    assert [d["completion"] for d in got] == [d["completion"] for d in want]
    # the same optimizer steps in all, and the same weights
    for folder in (killed, ref):
        info = json.loads((folder / "final" / "crossgym_run.json").read_text())
        assert info["steps"] == MAX_STEPS
        state = json.loads((folder / f"checkpoint-{MAX_STEPS}" / "trainer_state.json").read_text())
        assert state["global_step"] == MAX_STEPS
    a, b = _weights(killed / "final"), _weights(ref / "final")
    assert a.keys() == b.keys()
    import torch

    for k in a:
        assert torch.allclose(a[k], b[k], rtol=1e-5, atol=1e-6), k
    segments = _rows(killed / "crossgym_segments.jsonl")
    assert [(s["segment"], s["from_step"]) for s in segments] == [(1, 0), (2, ckpt_step)]


# ---------------------------------------------------------------------- what cannot resume, and what may change
def _fake_checkpoint(out: Path, step: int, *, complete: bool = True) -> Path:
    """A folder shaped like TRL's checkpoint-N (the finder reads trainer_state.json and looks for the files)."""
    folder = out / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    for name in ("model.safetensors", "optimizer.pt"):
        (folder / name).write_bytes(b"x")
    if complete:
        (folder / "trainer_state.json").write_text(json.dumps({"global_step": step}), encoding="utf-8")
    return folder


def _ran_once(tmp_path: Path, model: str, **over) -> tuple[Path, Path]:
    """A config, and an output_dir as a run of it killed after checkpoint-2 leaves it (segment 1 recorded)."""
    from crossgym.adapters.kit.resume import begin_segment
    from crossgym.config import load_run_config

    cfg = _config(tmp_path, model, "out", **over)
    out = tmp_path / "out"
    begin_segment(out, load_run_config(cfg), None, backend="trl")
    _fake_checkpoint(out, 2)
    return cfg, out


def _one_line_exit_2(argv, capsys) -> str:
    code, _, err = _cli(argv, capsys)
    assert code == 2, err
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


def test_resume_with_nothing_to_resume_is_one_line(tiny_model_dir, tmp_path, capsys):
    cfg = _config(tmp_path, str(tiny_model_dir), "out")
    line = _one_line_exit_2(["train", str(cfg), "--resume"], capsys)
    assert "nothing to resume: no complete checkpoint in" in line and "output_dir" in line


@pytest.mark.parametrize(("change", "field"), [
    ({"model": "OTHER"}, "model"),
    ({"grpo": {"lora": {"r": 8}}}, "grpo.lora"),
])
def test_a_resume_the_checkpoint_cannot_follow_is_one_line_naming_the_field(tiny_model_dir, tmp_path, capsys,
                                                                            change, field):
    _, out = _ran_once(tmp_path, str(tiny_model_dir))
    other = tmp_path / "other-model"
    other.mkdir()
    change = {k: (str(other) if v == "OTHER" else v) for k, v in change.items()}
    cfg = _config(tmp_path, change.pop("model", str(tiny_model_dir)), "out", **change)
    line = _one_line_exit_2(["train", str(cfg), "--resume"], capsys)
    assert f"cannot resume: {'the LoRA shape' if field == 'grpo.lora' else field} changed" in line
    assert field in line


def test_a_changed_backend_learning_rate_or_max_steps(tiny_model_dir, tmp_path):
    """The backend is bound to the checkpoint; a changed learning rate or max_steps is allowed and recorded."""
    from crossgym.adapters.trl.backend import TRLBackend
    from crossgym.config import load_run_config
    from crossgym.protocol import ConfigError

    cfg, out = _ran_once(tmp_path, str(tiny_model_dir))
    run = load_run_config(cfg).with_overrides(resume="auto")
    with pytest.raises(ConfigError, match="backend changed from 'trl' to 'unsloth'") as exc:
        TRLBackend().resume_point(run.with_overrides(backend="unsloth"))
    assert exc.value.where == "backend"
    changed = run.with_overrides(grpo={**run.grpo.model_dump(), "learning_rate": 5e-4, "max_steps": 9})
    point = TRLBackend().resume_point(changed)
    assert point is not None and point.step == 2 and point.segment == 2
    assert point.changed == {"grpo.learning_rate": [1e-3, 5e-4], "grpo.max_steps": [MAX_STEPS, 9]}


def test_the_newest_checkpoint_half_saved_by_a_kill_is_passed_over(tiny_model_dir, tmp_path):
    from crossgym.adapters.trl.backend import TRLBackend
    from crossgym.config import load_run_config
    from crossgym.protocol import ConfigError

    cfg, out = _ran_once(tmp_path, str(tiny_model_dir))
    half = _fake_checkpoint(out, 4, complete=False)
    run = load_run_config(cfg).with_overrides(resume="auto")
    point = TRLBackend().resume_point(run)
    assert point is not None and point.checkpoint == str(out / "checkpoint-2") and point.step == 2
    with pytest.raises(ConfigError, match="is not a complete checkpoint") as exc:
        TRLBackend().resume_point(run.with_overrides(resume=str(half)))
    assert exc.value.where == "resume"
    named = TRLBackend().resume_point(run.with_overrides(resume="checkpoint-2"))  # relative to output_dir
    assert named is not None and named.step == 2


def test_plan_shows_the_native_resume_setting(tiny_model_dir, tmp_path, capsys):
    cfg, out = _ran_once(tmp_path, str(tiny_model_dir), resume="auto")
    code, text, err = _cli(["plan", str(cfg), "--backend", "trl", "--json"], capsys)
    assert code == 0, err
    plan = json.loads(text)["plans"][0]
    assert plan["native_config"]["GRPOTrainer.train"] == {"resume_from_checkpoint": str(out / "checkpoint-2")}
    assert plan["native_config"]["GRPOConfig"]["save_steps"] == SAVE_STEPS
    assert any(n.startswith("resume: resuming from") and "at step 2" in n for n in plan["notes"])
    script = plan["files"]["train_trl.py"]  # the plain TRL script resumes the TRL way
    compile(script, "train_trl.py", "exec")
    assert "trainer.train(resume_from_checkpoint=last)" in script and "get_last_checkpoint(args.output_dir)" in script
    cfg = _config(tmp_path, str(tiny_model_dir), "out", resume="checkpoint-2")
    code, text, err = _cli(["plan", str(cfg), "--backend", "trl", "--json"], capsys)
    assert code == 0, err
    script = json.loads(text)["plans"][0]["files"]["train_trl.py"]
    assert f"trainer.train(resume_from_checkpoint={str(out / 'checkpoint-2')!r})" in script


def test_cutting_records_back_to_a_checkpoint(tmp_path):
    """Rows after the checkpoint step and a torn last line go; lines that are not JSON objects stay as written."""
    from crossgym.adapters.kit.resume import cut_records

    (tmp_path / "metrics.jsonl").write_text(
        "".join(json.dumps({"step": s, "reward": 0.1 * s}) + "\n" for s in range(1, 6)) + "not json\n"
        + '{"step": 6, "rew', encoding="utf-8")
    (tmp_path / "rollouts.jsonl").write_text(
        "".join(json.dumps({"provenance": {"step": s}}) + "\n" for s in (0, 0, 1, 1, 2, 2, None)),
        encoding="utf-8")
    assert cut_records(tmp_path, 2) == {"metrics": 3, "rollouts": 2}
    assert (tmp_path / "metrics.jsonl").read_text().splitlines() == [
        json.dumps({"step": 1, "reward": 0.1}), json.dumps({"step": 2, "reward": 0.2}), "not json"]
    kept = [json.loads(line)["provenance"]["step"] for line in (tmp_path / "rollouts.jsonl").read_text().splitlines()]
    assert kept == [0, 0, 1, 1, None]  # generated before the checkpoint (steps 1 and 2 of training)
    assert cut_records(tmp_path, 2) == {"metrics": 0, "rollouts": 0}  # nothing more to cut: the files stay


@pytest.mark.parametrize("lr", [5e-4, 1e-3])
def test_a_changed_learning_rate_and_max_steps_take_effect_and_are_recorded(tiny_model_dir, tmp_path, capsys, lr):
    """The optimizer and scheduler loaded from the checkpoint carry the old rate and schedule; the resumed run
    trains with the new rate, on the schedule a fresh run of the new max_steps follows."""
    cfg = _config(tmp_path, str(tiny_model_dir), "out", grpo={"max_steps": 2})
    code, _, err = _cli(["train", str(cfg), "--skip-gate"], capsys)
    assert code == 0, err
    cfg = _config(tmp_path, str(tiny_model_dir), "out", grpo={"max_steps": 4, "learning_rate": lr})
    rerun = lr == 1e-3  # and the gate, asked to, runs again on a resumed run
    code, _, err = _cli(["train", str(cfg), "--resume", *(["--rerun-gate"] if rerun else [])], capsys)
    assert code == 0, err
    err = " ".join(err.split())
    assert ("gate passed" in err) is rerun and ("eval gate not run again" in err) is not rerun
    changed = {"grpo.learning_rate": [1e-3, lr]} if lr != 1e-3 else {}
    changed["grpo.max_steps"] = [2, 4]
    assert "changed since the checkpoint: " + ", ".join(f"{k} {a} -> {b}" for k, (a, b) in changed.items()) in err
    fresh = _config(tmp_path, str(tiny_model_dir), "fresh", grpo={"max_steps": 4, "learning_rate": lr})
    code, _, err = _cli(["train", str(fresh), "--skip-gate"], capsys)
    assert code == 0, err
    got = {r["step"]: r["learning_rate"] for r in _rows(tmp_path / "out" / "metrics.jsonl") if "learning_rate" in r}
    want = {r["step"]: r["learning_rate"] for r in _rows(tmp_path / "fresh" / "metrics.jsonl")
            if "learning_rate" in r}
    assert sorted(got) == [1, 2, 3, 4]
    assert got[3] == pytest.approx(want[3]) and got[4] == pytest.approx(want[4])
    segments = _rows(tmp_path / "out" / "crossgym_segments.jsonl")
    assert segments[-1]["changed"] == changed
    assert segments[-1]["from_step"] == 2


def test_a_run_stopped_with_ctrl_c_saves_a_checkpoint_and_resumes(tiny_model_dir, tmp_path):
    """The first Ctrl-C (the stop signal) ends the run after the step in progress and saves checkpoint-N of it,
    with no grpo.save_steps set: the run can be resumed from exactly there."""
    import threading

    from crossgym.adapters.trl.backend import TRLBackend
    from crossgym.config import load_run_config

    run = load_run_config(_config(tmp_path, str(tiny_model_dir), "out", grpo={"save_steps": None, "max_steps": 4}))
    stop = threading.Event()

    def progress(step, max_steps, logs):
        if step >= 2:
            stop.set()

    first = TRLBackend().train(run, progress=progress, stop=stop)
    assert first.metrics["stopped_early"] and first.steps == 2
    assert (tmp_path / "out" / "checkpoint-2" / "trainer_state.json").is_file()
    second = TRLBackend().train(run.with_overrides(resume="auto"))
    assert second.steps == 4 and second.metrics["resumed_from"]["step"] == 2
    rows = [r for r in _rows(tmp_path / "out" / "metrics.jsonl") if "reward" in r]
    assert [(r["step"], r["segment"]) for r in rows] == [(1, 1), (2, 1), (3, 2), (4, 2)]


def test_a_backend_that_cannot_resume_says_so(tmp_path, capsys):
    """A backend written only against the protocol (capabilities.resume False) is never asked to resume."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "support"))
    import third_party_backend

    from crossgym.plugins import register_plugin, unregister_plugin

    plugin = third_party_backend.Plugin()
    register_plugin(plugin)
    try:
        cfg = _config(tmp_path, "some/model", "out", resume="auto")
        line = _one_line_exit_2(["train", str(cfg), "--backend", "third_party_step", "--skip-gate"], capsys)
        assert "the third_party_step backend cannot resume a run" in line and "resume" in line
        third_party_backend.EVENTS.clear()
        cfg = _config(tmp_path, "some/model", "out")  # resume: never trains as before
        code, out, err = _cli(["train", str(cfg), "--backend", "third_party_step", "--skip-gate"], capsys)
        assert code == 0, err
        assert [e for e, _ in third_party_backend.EVENTS] == ["check", "preload", "train"]
    finally:
        unregister_plugin(plugin)


def test_a_resume_in_a_later_data_epoch_keeps_the_prompt_order(tiny_model_dir, tmp_path):
    """8 tasks are 4 steps an epoch: resumed from checkpoint-5 (epoch 2), the run sees the prompts the
    uninterrupted one saw and ends with its weights. TRL's RepeatSampler draws each epoch's order from a generator
    the checkpoint does not hold; crossgym moves it on by the epochs already trained."""
    import shutil

    import torch

    from crossgym.adapters.trl.backend import TRLBackend
    from crossgym.config import load_run_config

    cfg = _config(tmp_path, str(tiny_model_dir), "out", grpo={"save_steps": 5, "max_steps": 6})
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(tasks.read_text().splitlines(keepends=True)[:8]))
    run = load_run_config(cfg)
    TRLBackend().train(run)
    want = _weights(tmp_path / "out" / "final")
    prompts = [d["task"]["id"] for d in map(json.loads, (tmp_path / "out" / "rollouts.jsonl").open())]
    shutil.rmtree(tmp_path / "out" / "checkpoint-6")  # as a kill after checkpoint-5 leaves it
    done = TRLBackend().train(run.with_overrides(resume="auto"))
    assert done.steps == 6 and done.metrics["resumed_from"]["step"] == 5
    again = [d["task"]["id"] for d in map(json.loads, (tmp_path / "out" / "rollouts.jsonl").open())]
    assert again == prompts  # step 6 (epoch 2) saw the same prompts
    got = _weights(tmp_path / "out" / "final")
    for k in got:
        assert torch.allclose(got[k], want[k], rtol=1e-5, atol=1e-6), k


def test_which_checkpoints_fall_on_a_generation_boundary():
    """GRPO generates every steps_per_generation x num_iterations micro-steps; a checkpoint between two
    generations cannot resume exactly (the buffer is not saved), and crossgym says which save_steps would."""
    from types import SimpleNamespace

    from crossgym.adapters.trl.checkpoints import generation_misalignment

    def args(ga=1, spg=None, mu=1):
        return SimpleNamespace(gradient_accumulation_steps=ga, steps_per_generation=spg, num_iterations=mu)

    assert generation_misalignment(3, args()) is None  # the default: a generation every step
    assert generation_misalignment(3, args(mu=2)) == 2 and generation_misalignment(4, args(mu=2)) is None
    assert generation_misalignment(1, args(ga=2, spg=4)) == 2 and generation_misalignment(2, args(ga=2, spg=4)) is None
