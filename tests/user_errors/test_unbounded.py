"""Unbounded work (issue 24, item 3): a huge n never builds an n-sized list first or hangs silently.

Each command runs in a fresh interpreter with its address space capped (RLIMIT_AS) and a short timeout: a list of
10**12 tasks or rollouts would be a MemoryError (a traceback, exit 1) or a timeout, never the one line and exit 2
these tests want. Where a huge n is legitimate (a loader's n is a limit over a file, `--limit` on a big source,
`tasks | head`), the output must stream: the first tasks come at once and the rest are never made.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from crossgym.environments.sources.common import MAX_TASKS

HUGE = 10**12
FILES = Path(__file__).parent / "files"
MEMORY_CAP = 1536 * 2**20  # far above what crossgym's CLI needs to start, far below 10**12 of anything
TIMEOUT = 90


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def _crossgym(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "COLUMNS": "100"}
    return subprocess.run([sys.executable, "-m", "crossgym.cli", *argv], capture_output=True, text=True, cwd=cwd,
                          timeout=TIMEOUT, env=env, preexec_fn=_cap_memory)


def _one_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("crossgym: error: ") and "(fix: " in lines[0], proc.stderr
    return lines[0]


@pytest.fixture()
def work(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "tasks_two.jsonl").write_bytes((FILES / "tasks_two.jsonl").read_bytes())
    for name, n in (("huge_int", str(HUGE)), ("huge_float", "1e12"), ("big", str(MAX_TASKS))):
        (tmp_path / f"config_{name}.yaml").write_text(
            "model: Qwen/Qwen2.5-0.5B-Instruct\n"
            f"tasks:\n  source: arithmetic\n  params: {{n: {n}, seed: 0}}\n"
            "grpo: {num_generations: 2, per_device_train_batch_size: 2, max_steps: 1}\n"
            "output_dir: runs/unbounded\n", encoding="utf-8")
    yield tmp_path


def _generators() -> list[str]:
    """Every registered task source that makes tasks (not one that reads a file), installed here."""
    from crossgym.plugins.manager import registry

    reg = registry("task_sources")
    loaders = {"jsonl", "parquet", "hf_dataset", "ifeval"}
    return [n for n in reg.names() if n not in loaders and not reg.entry(n).missing_requirements()]


@pytest.mark.parametrize("source", _generators())
def test_tasks_with_a_huge_n_is_refused_with_the_bound(work: Path, source: str) -> None:
    params = {"n": HUGE, **({"taskset": "x"} if source == "prime_verifiers" else {})}
    line = _one_line(_crossgym(["tasks", source, "--params", json.dumps(params)], work))
    assert f"task source {source!r}: n must be at most {MAX_TASKS}" in line and str(HUGE) in line


def test_tasks_n_flag_and_out(work: Path) -> None:
    t = time.monotonic()
    line = _one_line(_crossgym(["tasks", "arithmetic", "--n", str(HUGE), "--out", "t.jsonl"], work))
    assert time.monotonic() - t < TIMEOUT and f"n must be at most {MAX_TASKS}" in line
    assert not list(work.glob("t.jsonl*"))  # nothing written, not even a partial file


def test_tasks_streams_to_stdout(work: Path) -> None:
    """`crossgym tasks arithmetic --n 1000000 | head -2`: the first lines come at once, then the command ends
    quietly when the reader leaves (a list first would take minutes and about a GiB)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "crossgym.cli", "tasks", "arithmetic", "--n", str(MAX_TASKS)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=work, env=env,
                            preexec_fn=_cap_memory)
    assert proc.stdout is not None and proc.stderr is not None
    t = time.monotonic()
    first = [json.loads(proc.stdout.readline()) for _ in range(2)]
    assert time.monotonic() - t < 30
    assert [d["id"] for d in first] == ["arithmetic-d1-0-0", "arithmetic-d1-0-1"]
    proc.stdout.close()
    assert proc.wait(timeout=30) == 0
    assert "Traceback" not in proc.stderr.read().decode()
    proc.stderr.close()


def test_tasks_out_is_written_as_it_goes(work: Path) -> None:
    proc = _crossgym(["tasks", "arithmetic", "--n", "3000", "--out", "t.jsonl"], work)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == f"wrote 3000 tasks to {Path('t.jsonl')}\n"
    lines = (work / "t.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3000 and json.loads(lines[-1])["id"] == "arithmetic-d1-0-2999"
    assert not (work / "t.jsonl.partial").exists()


def test_a_loaders_n_is_a_limit_over_its_file(work: Path) -> None:
    proc = _crossgym(["tasks", "jsonl", "--params", json.dumps({"path": "tasks_two.jsonl", "n": HUGE})], work)
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(x)["id"] for x in proc.stdout.splitlines()] == ["t1", "t2"]


@pytest.mark.parametrize("config", ["config_huge_int.yaml", "config_huge_float.yaml"])
@pytest.mark.parametrize("command", [["train", "--dry-run"], ["eval", "--limit", "1", "--endpoint",
                                                                 "http://127.0.0.1:9/v1"]])
def test_a_config_with_a_huge_n(work: Path, config: str, command: list[str]) -> None:
    line = _one_line(_crossgym([command[0], config, *command[1:]], work))
    assert "task source 'arithmetic': n must be" in line and str(MAX_TASKS) in line
    assert not (work / "runs").exists()


def test_eval_samples_per_task_has_a_bound(work: Path) -> None:
    line = _one_line(_crossgym(["eval", "--tasks", "arithmetic", "--n", str(HUGE), "--limit", "1", "--endpoint",
                                "http://127.0.0.1:9/v1"], work))
    assert "--n: must be in 1..10000 (samples per task)" in line and str(HUGE) in line


def test_eval_limit_reads_only_what_it_needs(work: Path, tiny_model_dir: Path) -> None:
    """A config naming a million tasks with --limit 1: one task is made and rolled out, and the eval ends."""
    t = time.monotonic()
    proc = _crossgym(["eval", "config_big.yaml", "--limit", "1", "--model", str(tiny_model_dir), "--max-tokens", "4",
                      "--json", "--output-dir", "out"], work)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert time.monotonic() - t < TIMEOUT
    metrics = json.loads(proc.stdout)
    assert metrics["n_tasks"] == 1 and metrics["n_rollouts"] == 1
    rows = (work / "out" / "rollouts.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(r)["task"]["id"] for r in rows] == ["arithmetic-d1-0-0"]


def test_the_runner_streams_tasks_times_n(hf_engine, test_plugin, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """RolloutRunner with n = 10**12 samples of one task: the first batch is generated and stored at once (tasks x
    n is never listed); the progress callback stops it there."""
    import tracemalloc

    from crossgym.protocol import SamplingParams
    from crossgym.rollout import RolloutConfig, RolloutRunner, RolloutStore
    from crossgym.rollout.store import read_rollouts

    class Enough(Exception):
        pass

    def progress(done: int, total: int) -> None:
        assert total == HUGE
        if done >= 4:
            raise Enough

    config = RolloutConfig(model="tiny", engine="hf", sampling=SamplingParams(max_tokens=3, seed=0), n=HUGE)
    store = RolloutStore(tmp_path / "r.jsonl")
    runner = RolloutRunner(hf_engine, config, store=store, batch_size=4, progress=progress)
    tracemalloc.start()
    t = time.monotonic()
    try:
        with pytest.raises(Enough):
            runner.run(test_plugin.make_tasks(1))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        store.close()
    assert time.monotonic() - t < 60 and peak < 64 * 2**20
    samples = [r.provenance["sample"] for r in read_rollouts(tmp_path / "r.jsonl")]
    assert samples == list(range(len(samples))) and 4 <= len(samples) <= 12  # the batches in flight are kept too


@pytest.mark.parametrize(("argv", "words"), [
    (["-n", str(HUGE)], ["-n: must be in 1..1000000 (tasks to keep)"]),
    (["-n", "2", "--source-params", json.dumps({"n": HUGE})], ["task source 'arithmetic': n must be at most"]),
])
def test_synth_with_a_huge_n_is_refused_before_any_engine(work: Path, argv: list[str], words: list[str]) -> None:
    line = _one_line(_crossgym(["synth", "arithmetic", *argv, "--out", "o.jsonl", "--endpoint",
                                "http://127.0.0.1:9/v1", "--model", "m"], work))
    assert all(w in line for w in words), line
    assert not list(work.glob("o*"))
