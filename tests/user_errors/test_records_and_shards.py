"""Bad records and unlucky events for the commands that read rollouts in bulk (issue 27): verify-batch, reverify,
compare and the eval store, through the real entry point `crossgym.cli:main` and the Python API.

A bad argument is one line on stderr, exit 2; verify-batch stops at a bad record with one line naming its
``file:line`` (docs/guides/scale.md); reverify, compare and the eval store skip a line that holds no rollout with a
warning naming its ``file:line`` (reverify counts them), never a traceback, and never lose the other records.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from cli_lines import one_line as _one_line

from crossgym.cli import main
from crossgym.protocol import Completion, Task, Verdict, VerifierSpec
from crossgym.scoring import Provenance, append_records, rollout_record

#: a JSON line nested deeper than json.loads can read (RecursionError, not ValueError)
DEEP = '{"task": ' + "[" * 100_000 + "]" * 100_000 + ', "completion": "x"}\n'


def _task(tid: str) -> Task:
    return Task(id=tid, prompt="p", answer="Paris", verifier=VerifierSpec("exact_match"), metadata={"source": "x"})


def _key(i: int, config_hash: str = "h1") -> str:
    """The eval store's key of task x-i's first sample (its hash holds the task's content digest)."""
    from crossgym.rollout.config import keyed_hash, rollout_key

    return rollout_key(f"x-{i}", 0, keyed_hash(config_hash, _task(f"x-{i}")))


def _rollouts(path: Path, n: int = 4, *, config_hash: str = "h1") -> Path:
    records = []
    for i in range(n):
        prov = Provenance.new(_task(f"x-{i}").verifier, source="eval", key=_key(i, config_hash), model="m",
                              config_hash=config_hash, sample=0)
        records.append(rollout_record(_task(f"x-{i}"), Completion.from_text("Paris" if i % 2 else "Rome"),
                                      Verdict.ok(1.0, reason="stored"), provenance=prov))
    path.parent.mkdir(parents=True, exist_ok=True)
    append_records(path, records)
    return path


OK_LINE = json.dumps({"task": _task("t").to_dict(), "completion": "Paris"}) + "\n"


# ------------------------------------------------------------------ verify-batch: one line naming file:line
@pytest.mark.parametrize(("line", "words"), [
    (DEEP, ["nests too deeply"]),
    (json.dumps({"task": _task("t").to_dict(), "completion": 5}) + "\n", ["'completion' must be text", "a number"]),
    (json.dumps({"task": _task("t").to_dict(), "completion": None}) + "\n", ["'completion' must be text", "null"]),
    (json.dumps({"task": _task("t").to_dict(), "completion": ["a"]}) + "\n", ["'completion' must be text", "list"]),
    (json.dumps({"task": "t", "completion": "x"}) + "\n", ["'task' must be a JSON object", "got text"]),
    (json.dumps({"task": [1], "completion": "x"}) + "\n", ["'task' must be a JSON object", "got a list"]),
], ids=["deep", "completion-number", "completion-null", "completion-list", "task-text", "task-list"])
def test_verify_batch_a_bad_record_is_one_line_naming_its_line(tmp_path: Path, line: str, words: list[str],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(OK_LINE + line + OK_LINE)
    msg = _one_line(["verify-batch", str(src), "--no-progress"], capsys)
    assert f"{src}:2: " in msg, msg
    for w in words:
        assert w in msg, (w, msg)


def test_verify_batch_parquet_completion_not_text_and_a_corrupt_footer(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    task = json.dumps(_task("t").to_dict())
    ints = tmp_path / "ints.parquet"
    pq.write_table(pa.Table.from_pylist([{"task": task, "completion": 5}]), ints)
    msg = _one_line(["verify-batch", str(ints), "--no-progress"], capsys)
    assert f"{ints}:row 1: 'completion' must be text" in msg, msg
    good = tmp_path / "good.parquet"
    pq.write_table(pa.Table.from_pylist([{"task": task, "completion": "Paris"}] * 3), good)
    data = good.read_bytes()
    broken = tmp_path / "footer.parquet"
    broken.write_bytes(data[:-12] + b"\0" * 8 + data[-4:])  # the footer's metadata zeroed: pyarrow's message ends in \n
    assert "not a readable Parquet file" in _one_line(["verify-batch", str(broken), "--no-progress"], capsys)


def test_verify_batch_resume_refuses_a_damaged_out_or_another_verifier_version(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: a damaged middle line of --out was skipped (the resume then blamed 'another input'), and an --out
    scored by an older verifier version was resumed, one file holding two versions' verdicts."""
    from crossgym.serve.batch_cmd import verify_batch

    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"task": _task(f"t{i}").to_dict(), "completion": "Paris"}) + "\n"
                           for i in range(6)))
    full = tmp_path / "full.jsonl"
    verify_batch(src, out=full, progress=False)
    lines = full.read_text().splitlines(keepends=True)
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text(lines[0] + "garbage\n" + "".join(lines[1:3]))
    msg = _one_line(["verify-batch", str(src), "--out", str(damaged), "--no-progress"], capsys)
    assert f"--out holds a line that is not JSON at {damaged}:2" in msg, msg
    older = tmp_path / "older.jsonl"
    docs = [json.loads(x) for x in lines[:3]]
    for d in docs:
        d["provenance"]["verifier"]["version"] = "0"
    older.write_text("".join(json.dumps(d) + "\n" for d in docs))
    msg = _one_line(["verify-batch", str(src), "--out", str(older), "--no-progress"], capsys)
    assert "--out was scored by exact_match version 0, today's is version" in msg, msg
    assert older.read_text().count("\n") == 3  # left as it was
    for name, text in [("notes.yaml", "model: m\nlr: 1"), ("note.txt", "hello")]:  # not an --out: left whole
        other = tmp_path / name
        other.write_text(text)
        msg = _one_line(["verify-batch", str(src), "--out", str(other), "--no-progress"], capsys)
        assert f"--out: {other} is not the output of verify-batch" in msg or "is not JSON" in msg, msg
        assert other.read_text() == text  # before: its last line was cut as "torn" and records appended
    torn = tmp_path / "torn.jsonl"  # a kill mid-line: resumed, nothing lost or twice
    torn.write_text("".join(lines[:3]) + lines[3][:25])
    verify_batch(src, out=torn, progress=False)
    assert torn.read_bytes() == full.read_bytes()


def _as_parquet(tmp_path: Path, stem: str) -> tuple[Path, Path]:
    """Rollout records as JSONL and the same records as a Parquet file (task, verdict, provenance as JSON text)."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    src = _rollouts(tmp_path / f"{stem}.jsonl")
    rows = [{k: (json.dumps(v) if k in ("task", "verdict", "provenance") else v) for k, v in json.loads(x).items()
             if k in ("task", "completion", "verdict", "provenance")} for x in src.read_text().splitlines()]
    par = tmp_path / f"{stem}.parquet"
    pq.write_table(pa.Table.from_pylist(rows), par)
    return src, par


# ------------------------------------------------------------------ reverify: Parquet, counted skips, line numbers
def test_reverify_cli_reads_parquet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, par = _as_parquet(tmp_path, "r")
    with pytest.raises(SystemExit) as exc:
        main(["reverify", str(par), "--json"])
    out = capsys.readouterr()
    assert exc.value.code in (0, 1), out.err  # 1: some stored "1.0 passed" changed
    doc = json.loads(out.out)
    assert doc["n"] == doc["checked"] == 4 and doc["skipped"] == 0


def test_reverify_takes_a_folder_of_shards_or_a_glob_as_one_input(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Shards (JSONL and Parquet, as verify-batch writes and veRL saves) re-score as the one file they split."""
    whole = _rollouts(tmp_path / "whole.jsonl")
    lines = whole.read_text().splitlines(keepends=True)
    shards = tmp_path / "shards"
    shards.mkdir()
    (shards / "part-0.jsonl").write_text("".join(lines[:2]))
    _, par = _as_parquet(tmp_path, "rest")
    (shards / "part-1.parquet").write_bytes(par.read_bytes())  # (4 more rollouts, as Parquet)

    def report(arg: str) -> dict[str, object]:
        with pytest.raises(SystemExit) as exc:
            main(["reverify", arg, "--json"])
        out = capsys.readouterr()
        assert exc.value.code in (0, 1) and "Traceback" not in out.err, out.err
        return json.loads(out.out)

    one, folder, pattern = report(str(whole)), report(str(shards)), report(str(shards / "part-*"))
    assert folder["n"] == folder["checked"] == pattern["n"] == 6 and one["n"] == 4
    assert folder["by_verifier"] == pattern["by_verifier"] and folder["skipped"] == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    msg = _one_line(["reverify", str(empty)], capsys)
    assert "no .jsonl or .parquet files in this directory" in msg and str(empty) in msg
    assert str(tmp_path / "nothing-*") in _one_line(["reverify", str(tmp_path / "nothing-*")], capsys)


def test_reverify_counts_and_names_every_line_it_skips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _rollouts(tmp_path / "r.jsonl")
    good = src.read_text().splitlines(keepends=True)
    not_rollout = json.dumps({"task": _task("t").to_dict(), "verdict": {"reward": 1.0}}) + "\n"
    # line: 1 good, 2 blank, 3 not JSON, 4 good, 5 a JSON array, 6 too deep, 7 good, 8 not a rollout, 9 good, torn
    src.write_text(good[0] + "\n" + "not json\n" + good[1] + "[1, 2]\n" + DEEP + good[2] + not_rollout + good[3]
                   + good[0][:20])
    with pytest.raises(SystemExit):
        main(["reverify", str(src), "--json"])
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    doc = json.loads(out.out)
    assert doc["n"] == doc["checked"] == 4  # every rollout re-scored, none lost
    assert doc["skipped"] == 5
    assert [s.split(": ", 1)[0] for s in doc["skipped_lines"]] == [f"{src}:{n}" for n in (3, 5, 6, 8, 10)]
    assert "not a JSON object" in doc["skipped_lines"][1] and "nests too deeply" in doc["skipped_lines"][2]
    with pytest.raises(SystemExit):
        main(["reverify", str(src)])
    assert "5 line(s) skipped" in capsys.readouterr().out


def test_iter_rollouts_warns_with_the_line_number(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from crossgym.scoring.records import iter_records, iter_rollouts

    src = _rollouts(tmp_path / "r.jsonl", 2)
    good = src.read_text().splitlines(keepends=True)
    src.write_text("\n\n" + good[0] + '{"task": 1}\n' + "7\n" + good[1])
    with caplog.at_level(logging.WARNING):
        assert [r.task.id for r in iter_rollouts(src)] == ["x-0", "x-1"]
    assert f"{src}:4: skipping a record that is not a rollout" in caplog.text  # the line, not the 2nd record
    assert f"{src}:5: ignoring a line that is not a JSON object (a number (7))" in caplog.text
    seen: list[str] = []
    assert len(list(iter_records(src, skipped=lambda where, why: seen.append(where)))) == 3
    assert seen == [f"{src}:5"]


# ------------------------------------------------------------------ compare
def test_compare_survives_a_broken_metrics_json_and_a_deep_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    a = tmp_path / "a"
    _rollouts(a / "rollouts.jsonl")
    with (a / "rollouts.jsonl").open("a") as f:
        f.write(DEEP)
    (a / "metrics.json").write_text(json.dumps({"run": {"config_hash": ["h1"]}}))  # not a string: unhashable
    b = tmp_path / "b"
    _rollouts(b / "rollouts.jsonl")
    with pytest.raises(SystemExit) as exc, caplog.at_level(logging.WARNING):
        main(["compare", str(a), str(b), "--json"])
    out = capsys.readouterr()
    assert exc.value.code == 0 and "Traceback" not in out.err, out.err
    assert json.loads(out.out)["a"]["n_tasks"] == 4
    assert f"{a / 'rollouts.jsonl'}:5: skipping a line that nests too deeply" in caplog.text  # (as reverify)


def test_compare_without_metrics_uses_the_latest_settings_not_an_unhashed_record(tmp_path: Path) -> None:
    from crossgym.eval.compare import load_run

    run = tmp_path / "run.jsonl"
    old = rollout_record(_task("old"), Completion.from_text("Paris"), Verdict.ok(1.0, reason="ok"),
                         provenance=Provenance.new(_task("old").verifier, source="eval"))  # no key, no hash
    append_records(run, [old])
    _rollouts(run, 3, config_hash="h2")
    loaded = load_run(run)
    assert loaded.config_hash == "h2" and sorted(loaded.tasks) == ["x-0", "x-1", "x-2"]


# ------------------------------------------------------------------ the eval store
def test_a_damaged_stored_record_is_not_done_and_is_never_read_back(tmp_path: Path) -> None:
    """A keyed line that no longer reads as a rollout (edited, damaged) does not count as done, so a resumed eval
    makes it again; the store is read back without it (and then with the new one), never a traceback."""
    from crossgym.eval.run import StoredRollouts
    from crossgym.rollout.store import RolloutStore

    store = _rollouts(tmp_path / "rollouts.jsonl")
    lines = store.read_text().splitlines(keepends=True)
    damaged = json.loads(lines[1])
    del damaged["completion"]
    store.write_text(lines[0] + json.dumps(damaged) + "\n" + DEEP + "".join(lines[2:]))
    keys = RolloutStore(store).keys()
    assert keys == {_key(0), _key(2), _key(3)}
    tasks = [_task(f"x-{i}") for i in range(4)]
    assert [r.task.id for r in StoredRollouts(store, tasks, 1, "h1")] == ["x-0", "x-2", "x-3"]
    append_records(store, [json.loads(lines[1])])  # the resumed run makes x-1 again
    assert RolloutStore(store).keys() == keys | {_key(1)}
    assert [r.task.id for r in StoredRollouts(store, tasks, 1, "h1")] == ["x-0", "x-1", "x-2", "x-3"]


# ------------------------------------------------------------------ --address that nothing answers
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(("address", "words"), [
    (None, ["no Ray head answers at 127.0.0.1:", "connection refused", "ray start --head"]),
    ("127.0.0.1:99999", ["port 99999 is out of range"]),
    ("not an address", ["cannot connect to Ray", "Invalid address format"]),
], ids=["refused", "port-range", "unparsable"])
def test_verify_batch_address_that_nothing_answers_is_one_line_at_once(tmp_path: Path, address: str | None,
                                                                       words: list[str]) -> None:
    """Before: ray.init retried an unreachable 127.0.0.1 port for many minutes, and an unparsable address was a
    traceback. A fresh interpreter (Ray state stays out of this one); loopback only."""
    pytest.importorskip("ray")
    src = tmp_path / "in.jsonl"
    src.write_text(OK_LINE)
    address = address or f"127.0.0.1:{_free_port()}"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", RAY_USAGE_STATS_ENABLED="0")
    proc = subprocess.run([sys.executable, "-m", "crossgym.cli", "verify-batch", str(src), "--address", address,
                           "--no-progress"], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr[-2000:]
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and f"--address {address}" in lines[0], proc.stderr[-2000:]
    for w in words:
        assert w in lines[0], (w, lines[0])


def test_a_folder_of_upper_case_jsonl_is_read_like_lower_case(tmp_path: Path) -> None:
    """Before: *.parquet matched in any case, *.jsonl only in lower case ('no .jsonl or .parquet files')."""
    from crossgym.serve.batch_cmd import input_files

    shards = tmp_path / "shards"
    shards.mkdir()
    (shards / "A.JSONL").write_text(OK_LINE)
    (shards / "b.jsonl").write_text(OK_LINE)
    (shards / "notes.txt").write_text("not a shard")
    assert [p.name for p in input_files(shards)] == ["A.JSONL", "b.jsonl"]


def test_verify_batch_a_huge_local_workers_is_refused_before_any_process(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Before: --workers 100000 grew the verifier process pool to that size (math-verify's workers are ~100 MB
    each: a chunk of 2,048 math records could start 2,048 of them)."""
    src = tmp_path / "in.jsonl"
    src.write_text(OK_LINE)
    msg = _one_line(["verify-batch", str(src), "--workers", "100000", "--no-progress"], capsys)
    assert "--workers: 100000 local workers" in msg and "--ray" in msg, msg


def test_verify_batch_address_of_a_server_that_is_not_ray_is_one_line_at_once(tmp_path: Path) -> None:
    """The dashboard's HTTP port (or any other server) given as --address: before, ray.init retried it for minutes
    ('Failed to get cluster ID from GCS server'). A plain HTTP/1 server of this test on 127.0.0.1."""
    import http.server
    import threading

    pytest.importorskip("ray")
    src = tmp_path / "in.jsonl"
    src.write_text(OK_LINE)
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        address = f"127.0.0.1:{server.server_address[1]}"
        env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_USE_TLS")}
        env.update(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", RAY_USAGE_STATS_ENABLED="0")
        proc = subprocess.run([sys.executable, "-m", "crossgym.cli", "verify-batch", str(src), "--address", address,
                               "--no-progress"], capture_output=True, text=True, timeout=120, env=env)
    finally:
        server.shutdown()
        server.server_close()
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr[-2000:]
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and f"what answers at {address} is not a Ray head" in lines[0], proc.stderr[-2000:]


def test_a_record_json_cannot_encode_is_still_one_line_never_an_exception(tmp_path: Path) -> None:
    """Before: a metadata key that is not text (a tuple), an int past Python's 4,300-digit limit or a cycle raised
    from dumps_record: through RecordWriter.write, an exception in a trainer's reward path."""
    from crossgym.scoring.records import RecordWriter, dumps_record, iter_records

    cycle: dict[str, object] = {}
    cycle["self"] = cycle
    odd = [{"task": {"metadata": {(1, 2): "x"}}, "verdict": {"reward": 1.0, "passed": True}},
           {"task": {"answer": 10**5000}}, {"task": cycle}]
    for rec in odd:
        line = dumps_record(rec)
        assert line.endswith("\n") and line.count("\n") == 1 and isinstance(json.loads(line), dict)
    assert json.loads(dumps_record(odd[0]))["task"]["metadata"] == {"(1, 2)": "x"}
    writer = RecordWriter(tmp_path / "r.jsonl", backend="test")
    writer.write(odd)
    assert len(list(iter_records(tmp_path / "r.jsonl"))) == 3


def test_compare_reads_a_parquet_of_eval_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: 'not UTF-8 text (it looks like Windows-1252)' for any Parquet file, which reverify and verify-batch
    read (docs/serve.md)."""
    src, par = _as_parquet(tmp_path, "a")
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(par), str(src), "--json"])
    out = capsys.readouterr()
    assert exc.value.code == 0, out.err
    doc = json.loads(out.out)
    assert doc["a"]["n_tasks"] == doc["b"]["n_tasks"] == 4


def test_an_out_that_the_input_folder_or_glob_would_read_back_is_refused_up_front(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: the first run wrote shards/out.jsonl; the rerun that resumes it (the same command) then read it as an
    input and refused ('is also an input file'), so a killed run could not be resumed."""
    shards = tmp_path / "shards"
    shards.mkdir()
    (shards / "a.jsonl").write_text(OK_LINE)
    for source in (str(shards), str(shards / "*.jsonl")):
        msg = _one_line(["verify-batch", source, "--out", str(shards / "out.jsonl"), "--no-progress"], capsys)
        assert f"would be read as an input by {source}" in msg, msg
    assert sorted(p.name for p in shards.iterdir()) == ["a.jsonl"]
    with pytest.raises(SystemExit) as exc:  # beside the folder, or matching no pattern: fine
        main(["verify-batch", str(shards / "*.jsonl"), "--out", str(shards / "out.txt"), "--no-progress"])
    assert exc.value.code == 0 and (shards / "out.txt").is_file()


def test_verify_batch_skips_an_input_torn_by_a_kill_and_scores_a_last_line_without_newline(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Before: a torn last line (the writer killed mid-line) stopped verify-batch with 'not JSON' and nothing
    scored; the other readers skip it. A whole record without its final newline is still a record."""
    from crossgym.serve.batch_cmd import verify_batch

    torn = tmp_path / "torn.jsonl"
    torn.write_text(OK_LINE * 3 + OK_LINE[: len(OK_LINE) // 2])
    with caplog.at_level(logging.WARNING):
        doc = verify_batch(torn, out=tmp_path / "out.jsonl", progress=False)
    assert doc["n"] == 3 and (tmp_path / "out.jsonl").read_text().count("\n") == 3
    assert f"{torn}:4: skipping a torn last line" in caplog.text
    whole = tmp_path / "whole.jsonl"
    whole.write_text(OK_LINE * 2 + OK_LINE.rstrip("\n"))
    assert verify_batch(whole, progress=False)["n"] == 3


def test_reverify_of_a_file_with_no_json_record_is_one_line_that_says_so(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Before: a warning per line, then 'the file is empty' (a config passed by mistake is not empty)."""
    cfg = tmp_path / "run.yaml"
    cfg.write_text("model: m\ntasks: x\nlr: 1\n")
    msg = _one_line(["reverify", str(cfg)], capsys)
    assert "none of its 3 lines is a JSON record" in msg and f"{cfg}:1: a line that is not JSON" in msg, msg


def test_a_lone_surrogate_in_records_prints_as_its_escape_in_every_summary(tmp_path: Path) -> None:
    """Issue 20: text a solution produced (a lone surrogate in a completion, a task id) serialises everywhere. The
    records held it (as JSON escapes), --json printed it, but reverify's and compare's summaries and compare's
    --html page died on it (UnicodeEncodeError: exit 1 and a traceback): the console's stdout refused it."""
    bad = _task("x-\ud800")
    records = [rollout_record(t, Completion.from_text(text), Verdict.ok(1.0, reason="stored"),
                              provenance=Provenance.new(t.verifier, source="eval"))
               for t, text in ((bad, "Paris \ud800"), (_task("x-1"), "Paris"))]
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    append_records(a, records)
    append_records(b, records[1:])  # B lacks the task: it is listed as "only in A", by its id
    html = tmp_path / "compare.html"
    env = {**os.environ, "LC_ALL": "C.UTF-8", "PYTHONIOENCODING": ""}  # stdout: UTF-8 with surrogateescape
    for args, code, needle in [(["reverify", str(a)], 1, "x-\\ud800 [exact_match]: 1 -> 0"),
                               (["compare", str(a), str(b), "--html", str(html)], 0, "only in A: 1 tasks: x-\\ud800")]:
        proc = subprocess.run([sys.executable, "-m", "crossgym.cli", *args], capture_output=True, text=True,
                              errors="replace", timeout=120, env=env)
        assert proc.returncode == code and "Traceback" not in proc.stderr, proc.stderr
        assert needle in proc.stdout, proc.stdout
    assert "x-\\ud800" in html.read_text(encoding="utf-8")


def test_verify_batch_does_not_resume_an_out_it_did_not_write(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """An --out holding the first records of the input as some other writer stored them (a copy of eval's
    rollouts.jsonl: each with a verdict) was resumed: its old verdicts were kept as if scored today, never
    re-scored, and counted into the summary. Only verify-batch's own records (provenance source verify-batch)
    are resumed; anything else is one line, and the file is left as it was."""
    src = _rollouts(tmp_path / "rollouts.jsonl", 6)
    copy = tmp_path / "copy.jsonl"
    copy.write_text("".join(src.read_text().splitlines(keepends=True)[:3]))
    msg = _one_line(["verify-batch", str(src), "--out", str(copy), "--no-progress"], capsys)
    assert f"--out: {copy} is not the output of verify-batch (line 1 holds a verdict that it did not write" in msg
    assert copy.read_text() == "".join(src.read_text().splitlines(keepends=True)[:3])
