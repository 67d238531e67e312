"""verify-batch --ray against a real Ray head (`ray start --head` on 127.0.0.1, started and stopped by this module):
--address from the CLI, back-pressure (bounded shards in flight and held), a killed actor's shard redone with
nothing lost or repeated, resume, one progress line, a bad line named from the actor."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from crossgym.protocol import Task, VerifierSpec  # noqa: E402
from crossgym.protocol.errors import ConfigError  # noqa: E402

#: Ray on loopback only: the node's address is 127.0.0.1 (not the host's interface), no token, no usage stats
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
CODE = "```python\ndef add(a, b):\n    return a + b\n```"
BUGGY = "```python\ndef add(a, b):\n    return a - b\n```"


@pytest.fixture(scope="module")
def head() -> Iterator[str]:
    """A one-node Ray cluster of 2 CPUs on 127.0.0.1 in its own temp dir and process group (stopped by signalling
    that group only: never `ray stop`, which would end every Ray on the machine); this process joins it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    temp = tempfile.mkdtemp(prefix="cgray", dir="/tmp")  # short: Ray's socket paths live under it
    env = {**os.environ, **LOOPBACK_ENV}
    proc = subprocess.Popen([str(Path(sys.executable).with_name("ray")), "start", "--head", "--block",
                             "--node-ip-address=127.0.0.1", f"--port={port}", "--include-dashboard=false",
                             "--num-cpus=2", f"--temp-dir={temp}", "--disable-usage-stats"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    address = f"127.0.0.1:{port}"
    from ray._private import ray_constants

    cluster_default = ray_constants.ENABLE_RAY_CLUSTER
    saved = {k: os.environ.get(k) for k in LOOPBACK_ENV}
    try:
        os.environ.update(LOOPBACK_ENV)
        # this process imported Ray before the env above: tell it too, or it rewrites 127.0.0.1 to the host's IP
        ray_constants.ENABLE_RAY_CLUSTER = False
        if ray.is_initialized():
            ray.shutdown()
        deadline = time.monotonic() + 120
        while True:
            try:
                ray.init(address=address, include_dashboard=False, log_to_driver=False)
                break
            except Exception:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(1)
        assert ray.cluster_resources().get("CPU") == 2
        yield address
    finally:
        from crossgym.serve.ray_scale import shutdown_workers

        shutdown_workers()
        if ray.is_initialized():
            ray.shutdown()
        os.killpg(proc.pid, signal.SIGTERM)  # the head's own process group: the processes this test started
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:  # it drains for up to 30 s: not worth waiting for
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # that group's stragglers, if any
        except ProcessLookupError:
            pass
        proc.wait(10)
        shutil.rmtree(temp, ignore_errors=True)
        ray_constants.ENABLE_RAY_CLUSTER = cluster_default
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _write(path: Path, n: int, slow: bool = False) -> Path:
    """n records: exact_match, json_answer and code_tests in GRPO groups of 4 (``slow``: every record is a
    code_tests task whose tests take ~0.3 s)."""
    with path.open("w") as f:
        for i in range(n):
            if slow:
                task = Task(id=f"s{i}", prompt="p", answer={"tests": ["import time; time.sleep(0.3)",
                                                                      "assert add(1, 2) == 3"]},
                            verifier=VerifierSpec(name="code_tests"))
                comp = CODE if i % 3 else BUGGY
            elif i % 10 < 4:
                task = Task(id=f"e{i}", prompt="p", answer=f"city{i}", verifier=VerifierSpec(name="exact_match"))
                comp = f"<answer> city{i + (i % 7 == 0)} </answer>"
            elif i % 10 < 6:
                task = Task(id=f"j{i}", prompt="p", answer=i, verifier=VerifierSpec(name="json_answer"))
                comp = f'```json\n{{"answer": {i}}}\n```'
            else:  # code tasks in groups of 4 (one of them wrong)
                g = i // 4
                task = Task(id=f"c{g}", prompt="p", answer={"tests": ["assert add(2, 3) == 5"]},
                            verifier=VerifierSpec(name="code_tests"))
                comp = BUGGY if i % 4 == 3 else CODE
            f.write(json.dumps({"task": task.to_dict(), "completion": comp,
                                "verdict": {"reward": 1.0, "passed": True}}) + "\n")
    return path


def test_cli_address_on_a_ray_head(head: str, tmp_path: Path) -> None:
    """`crossgym verify-batch --address 127.0.0.1:PORT` from another process joins the head, spreads shards over
    its 2 actors and writes exactly what the local path writes; the cluster is left running with its CPUs free."""
    from crossgym.serve.batch_cmd import verify_batch

    src = _write(tmp_path / "rollouts.jsonl", 150)
    proc = subprocess.run([sys.executable, "-m", "crossgym.cli", "verify-batch", str(src), "--ray", "--address",
                           head, "--workers", "2", "--out", str(tmp_path / "ray.jsonl"), "--json"],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, **LOOPBACK_ENV, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    assert doc["mode"] == "ray" and doc["n"] == 150
    assert doc["ray"]["actors"] == 2 and doc["ray"]["shards"] == 3 and doc["ray"]["retries"] == 0
    local = verify_batch(src, out=tmp_path / "local.jsonl", progress=False)
    assert (tmp_path / "ray.jsonl").read_bytes() == (tmp_path / "local.jsonl").read_bytes()
    assert doc["passed"] == local["passed"] and doc["mean_reward"] == local["mean_reward"]
    deadline = time.monotonic() + 60
    while ray.available_resources().get("CPU") != 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ray.available_resources().get("CPU") == 2


def test_back_pressure_bounds_the_shards_held(head: str, tmp_path: Path) -> None:
    """The input is read only as fast as actors score it: never more than window shards pulled ahead of the
    last one written, never more than in_flight per actor submitted, whatever the input's length."""
    from crossgym.protocol import Completion
    from crossgym.serve.ray_scale import IN_FLIGHT, ShardStream, shutdown_workers
    from crossgym.verifiers.batch import verify_many

    task = Task(id="e", prompt="p", answer="x", verifier=VerifierSpec(name="exact_match"))
    pulled = [0]

    def shards() -> Iterator[list[tuple[Task, Completion]]]:
        for k in range(60):
            pulled[0] += 1
            yield [(task, Completion.from_text(f"<answer> {'x' if (k + j) % 2 else 'y'} </answer>"))
                   for j in range(3)]

    stream = ShardStream(2)
    ahead = []
    results = []
    for verdicts in stream.run(shards(), "verify"):
        results.append(verdicts)
        ahead.append(pulled[0] - len(results))
    assert len(results) == 60 and max(ahead) <= stream.window == 2 * IN_FLIGHT * 2
    assert stream.stats["max_in_flight"] <= IN_FLIGHT * 2 and stream.stats["max_held"] <= stream.window
    assert stream.stats["shards"] == 60 and stream.stats["retries"] == 0
    flat = [v for vs in results for v in vs]
    expected = verify_many([(task, f"<answer> {'x' if (k + j) % 2 else 'y'} </answer>")
                            for k in range(60) for j in range(3)])
    assert flat == expected
    shutdown_workers()
    # verify-batch's stream on a file of 40 shards: the same bounds
    src = _write(tmp_path / "many.jsonl", 640)
    doc = verify_batch_ray(src, head, tmp_path / "out.jsonl", shard=16)
    assert doc["ray"]["shards"] == 40 and doc["ray"]["max_held"] <= 8 and doc["ray"]["max_in_flight"] <= 4
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 640


def verify_batch_ray(src: Path, address: str, out: Path, **kwargs: object) -> dict[str, object]:
    from crossgym.serve.batch_cmd import verify_batch

    return verify_batch(src, use_ray=True, address=address, workers=2, out=out, progress=False, **kwargs)


def test_an_actor_killed_mid_shard_loses_nothing(head: str, tmp_path: Path) -> None:
    """Ray kills one of the two actors while it scores a shard: that shard (and the one queued behind it) is
    redone on a fresh actor; --out holds every record once, identical to the local output."""
    from crossgym.serve import ray_scale
    from crossgym.serve.batch_cmd import verify_batch

    src = _write(tmp_path / "slow.jsonl", 24, slow=True)
    result: dict[str, object] = {}

    def run() -> None:
        try:
            result["doc"] = verify_batch_ray(src, head, tmp_path / "ray.jsonl", shard=3)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            result["error"] = exc

    worker = threading.Thread(target=run)
    worker.start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any(len(g) == 2 for g in ray_scale._workers.values()):
        time.sleep(0.05)
    time.sleep(2.5)  # past the warm-up record: both actors are inside a shard (3 records of ~0.35 s each)
    victim = next(g for g in ray_scale._workers.values() if len(g) == 2)[0]
    ray.kill(victim, no_restart=True)
    worker.join(240)
    assert not worker.is_alive()
    if "error" in result:
        raise result["error"]  # type: ignore[misc]
    doc = result["doc"]
    assert isinstance(doc, dict)
    assert doc["ray"]["retries"] >= 1 and doc["ray"]["replaced"] == 1 and doc["ray"]["shards"] == 8
    local = verify_batch(src, out=tmp_path / "local.jsonl", progress=False)
    lines = (tmp_path / "ray.jsonl").read_text().splitlines()
    assert len(lines) == len(set(lines)) == 24
    assert (tmp_path / "ray.jsonl").read_bytes() == (tmp_path / "local.jsonl").read_bytes()
    assert doc["passed"] == local["passed"] == 16


def test_resume_progress_and_a_bad_line(head: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """An --out cut mid-line by a kill is resumed on Ray (the rest scored, the whole equal to a fresh run); the
    run shows one progress line; a bad line is one ConfigError naming file:line, raised in the actor."""
    from crossgym.serve import batch_cmd

    src = _write(tmp_path / "rollouts.jsonl", 200)
    full = tmp_path / "full.jsonl"
    verify_batch_ray(src, head, full, shard=16)
    data = full.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 40  # 100-odd whole records and a torn one
    part = tmp_path / "part.jsonl"
    part.write_bytes(data[:cut])
    monkeypatch.setattr(batch_cmd, "PROGRESS_EVERY_S", 0.0)
    capsys.readouterr()
    doc = batch_cmd.verify_batch(src, use_ray=True, address=head, workers=2, out=part, shard=16, progress=True)
    err = capsys.readouterr().err
    assert part.read_bytes() == data
    assert doc["resumed"] == data[:cut].count(b"\n") and doc["n"] == 200
    assert "resumed:" in err and "verify-batch: 200 records (ray, 2 actors)" in err
    bad = tmp_path / "bad.jsonl"
    lines = src.read_text().splitlines()
    lines[36] = '{"task": {"id": "x"}, "completion": "c"'
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=r"bad\.jsonl:37"):
        verify_batch_ray(bad, head, tmp_path / "bad_out.jsonl", shard=16)
    # the shards before the bad one are in --out: a rerun after the fix resumes there
    assert len((tmp_path / "bad_out.jsonl").read_text().splitlines()) == 32
