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
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from crossgym.protocol import Task, VerifierSpec  # noqa: E402
from crossgym.text.chunks import tapered  # noqa: E402

#: Ray on loopback only: the node's address is 127.0.0.1 (not the host's interface), no token, no usage stats
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
CODE = "```python\ndef add(a, b):\n    return a + b\n```"
BUGGY = "```python\ndef add(a, b):\n    return a - b\n```"


#: what every driver process runs first: join the test's head (argv[1])
PRELUDE = """
import json, os, sys, threading, time
from pathlib import Path
import ray
ray.init(address=sys.argv[1], include_dashboard=False, log_to_driver=False)
"""


def _driver(head: str, code: str, *args: object, timeout: float = 300) -> tuple[Any, str]:
    """Run ``code`` as a Ray driver of the head in a fresh process (Ray cannot join a second cluster in a process
    that has run one: the actors of the new session die unstarted); its last stdout line as JSON, and its stderr."""
    proc = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(code), head, *map(str, args)],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **LOOPBACK_ENV, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


@pytest.fixture(scope="module")
def head() -> Iterator[str]:
    """A one-node Ray cluster of 2 CPUs on 127.0.0.1 in its own temp dir and process group (stopped by signalling
    that group only: never `ray stop`, which would end every Ray on the machine)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    temp = tempfile.mkdtemp(prefix="cgray", dir="/tmp")  # short: Ray's socket paths live under it
    proc = subprocess.Popen([str(Path(sys.executable).with_name("ray")), "start", "--head", "--block",
                             "--node-ip-address=127.0.0.1", f"--port={port}", "--include-dashboard=false",
                             "--num-cpus=2", f"--temp-dir={temp}", "--disable-usage-stats"],
                            env={**os.environ, **LOOPBACK_ENV}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:  # the head is up when a driver can join it
            try:
                cpus, _ = _driver(address, "print(json.dumps(ray.cluster_resources().get('CPU')))", timeout=120)
                break
            except AssertionError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(1)
        assert cpus == 2
        yield address
    finally:
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
                           head, "--workers", "2", "--shard", "64", "--out", str(tmp_path / "ray.jsonl"), "--json"],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, **LOOPBACK_ENV, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    assert doc["mode"] == "ray" and doc["n"] == 150
    assert doc["ray"]["actors"] == 2 and doc["ray"]["retries"] == 0
    assert doc["ray"]["shards"] == len(list(tapered(range(150), 64, 2)))  # the last shards taper over the 2 actors
    local = verify_batch(src, out=tmp_path / "local.jsonl", progress=False)
    assert (tmp_path / "ray.jsonl").read_bytes() == (tmp_path / "local.jsonl").read_bytes()
    assert doc["passed"] == local["passed"] and doc["mean_reward"] == local["mean_reward"]
    free, _ = _driver(head, """
        deadline = time.monotonic() + 60  # Ray frees the ended actors' CPUs a moment later
        while ray.available_resources().get("CPU") != 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        print(json.dumps(ray.available_resources().get("CPU")))
    """)
    assert free == 2


def test_back_pressure_bounds_the_shards_held(head: str, tmp_path: Path) -> None:
    """The input is read only as fast as actors score it: never more than window shards pulled ahead of the
    last one yielded, never more than in_flight per actor submitted, whatever the input's length."""
    src = _write(tmp_path / "many.jsonl", 640)
    got, _ = _driver(head, """
        from crossgym.protocol import Completion, Task, VerifierSpec
        from crossgym.serve.batch_cmd import verify_batch
        from crossgym.serve.ray_scale import IN_FLIGHT, ShardStream, shutdown_workers
        from crossgym.verifiers.batch import verify_many

        task = Task(id="e", prompt="p", answer="x", verifier=VerifierSpec(name="exact_match"))
        pulled = [0]

        def text(k, j):
            return f"<answer> {'x' if (k + j) % 2 else 'y'} </answer>"

        def shards():
            for k in range(60):
                pulled[0] += 1
                yield [(task, Completion.from_text(text(k, j))) for j in range(3)]

        stream = ShardStream(2)
        results, ahead = [], []
        for verdicts in stream.run(shards(), "verify"):
            results.append(verdicts)
            ahead.append(pulled[0] - len(results))
        same = [v for vs in results for v in vs] == verify_many([(task, text(k, j)) for k in range(60)
                                                                   for j in range(3)])
        shutdown_workers()
        doc = verify_batch(Path(sys.argv[2]), use_ray=True, workers=2, out=Path(sys.argv[3]), progress=False,
                           shard=16)
        print(json.dumps({"n": len(results), "ahead": max(ahead), "window": stream.window, "in_flight": IN_FLIGHT,
                          "stats": stream.stats, "same": same, "doc": doc}))
    """, src, tmp_path / "out.jsonl")
    assert got["n"] == 60 and got["same"]
    assert got["ahead"] <= got["window"] == 2 * got["in_flight"] * 2
    assert got["stats"]["max_in_flight"] <= got["in_flight"] * 2 and got["stats"]["max_held"] <= got["window"]
    assert got["stats"]["shards"] == 60 and got["stats"]["retries"] == 0
    ray_doc = got["doc"]["ray"]  # verify-batch's stream of a file of 40 shards: the same bounds
    assert ray_doc["shards"] == len(list(tapered(range(640), 16, 2))) and ray_doc["max_held"] <= 8 and ray_doc["max_in_flight"] <= 4
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 640


def test_an_actor_killed_mid_shard_loses_nothing(head: str, tmp_path: Path) -> None:
    """Ray kills one of the two actors while it scores a shard: that shard (and the one queued behind it) is
    redone on a fresh actor; --out holds every record once, identical to the local output."""
    from crossgym.serve.batch_cmd import verify_batch

    src = _write(tmp_path / "slow.jsonl", 24, slow=True)
    doc, _ = _driver(head, """
        from crossgym.serve import ray_scale
        from crossgym.serve.batch_cmd import verify_batch

        result = {}

        def run():
            result["doc"] = verify_batch(Path(sys.argv[2]), use_ray=True, workers=2, out=Path(sys.argv[3]),
                                         progress=False, shard=3)

        worker = threading.Thread(target=run)
        worker.start()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any(len(g) == 2 for g in ray_scale._workers.values()):
            time.sleep(0.05)
        time.sleep(2.5)  # past the warm-up record: both actors are inside a shard (3 records of ~0.35 s each)
        victim = next(g for g in ray_scale._workers.values() if len(g) == 2)[0]
        ray.kill(victim, no_restart=True)
        worker.join(240)
        print(json.dumps(result["doc"]))
    """, src, tmp_path / "ray.jsonl")
    assert doc["ray"]["retries"] >= 1 and doc["ray"]["replaced"] == 1 and \
        doc["ray"]["shards"] == len(list(tapered(range(24), 3, 2)))
    local = verify_batch(src, out=tmp_path / "local.jsonl", progress=False)
    lines = (tmp_path / "ray.jsonl").read_text().splitlines()
    assert len(lines) == len(set(lines)) == 24
    assert (tmp_path / "ray.jsonl").read_bytes() == (tmp_path / "local.jsonl").read_bytes()
    assert doc["passed"] == local["passed"] == 16


RUN = """
from crossgym.protocol.errors import ConfigError
from crossgym.serve import batch_cmd

batch_cmd.PROGRESS_EVERY_S = 0.0
try:
    doc = batch_cmd.verify_batch(Path(sys.argv[2]), use_ray=True, workers=2, out=Path(sys.argv[3]), shard=16,
                                 progress=sys.argv[4] == "progress")
except ConfigError as exc:
    doc = {"error": str(exc)}
print(json.dumps(doc))
"""


def test_resume_progress_and_a_bad_line(head: str, tmp_path: Path) -> None:
    """An --out cut mid-line by a kill is resumed on Ray (the rest scored, the whole equal to a fresh run); the
    run shows one progress line; a bad line is one ConfigError naming file:line, raised in the actor, after the
    shards before it are written."""
    src = _write(tmp_path / "rollouts.jsonl", 200)
    full = tmp_path / "full.jsonl"
    _driver(head, RUN, src, full, "quiet")
    data = full.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 40  # 100-odd whole records and a torn one
    part = tmp_path / "part.jsonl"
    part.write_bytes(data[:cut])
    doc, err = _driver(head, RUN, src, part, "progress")
    assert part.read_bytes() == data
    assert doc["resumed"] == data[:cut].count(b"\n") and doc["n"] == 200
    assert "resumed:" in err and "verify-batch: 200 records (ray, 2 actors)" in err
    bad = tmp_path / "bad.jsonl"
    lines = src.read_text().splitlines()
    lines[36] = '{"task": {"id": "x"}, "completion": "c"'
    bad.write_text("\n".join(lines) + "\n")
    doc, _ = _driver(head, RUN, bad, tmp_path / "bad_out.jsonl", "quiet")
    assert "bad.jsonl:37" in doc["error"]
    # the two shards before the bad one are in --out: a rerun after the fix resumes there
    assert len((tmp_path / "bad_out.jsonl").read_text().splitlines()) == 32
