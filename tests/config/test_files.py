"""config/files.py: how user files are read and output paths checked (the rules behind issue 24's one-line errors)."""

from __future__ import annotations

from pathlib import Path

import pytest

from crossgym.config import load_run_config
from crossgym.config.files import (
    check_model_path,
    check_output_dir,
    check_output_file,
    check_sampling,
    check_user_encoding,
    guess_encoding,
    looks_local,
    read_user_text,
    task_from_user_dict,
)
from crossgym.protocol.errors import ConfigError


@pytest.mark.parametrize(("raw", "enc"), [
    ("héllo".encode(), None),
    ("héllo".encode("utf-16"), "UTF-16"),
    ("hello world".encode("utf-16-be"), "UTF-16"),  # no byte-order mark: every other byte is 0
    ("héllo".encode("utf-32"), "UTF-32"),
    ("héllo".encode("latin-1"), "Latin-1"),
    ("“quoted”".encode("cp1252"), "Windows-1252"),
    ("é".encode()[:1], None),  # a head cut inside a character is still UTF-8
])
def test_encodings_are_told_apart(raw: bytes, enc: str | None) -> None:
    assert guess_encoding(raw) == enc


def test_a_utf8_bom_is_dropped_and_other_encodings_named(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_bytes(b"\xef\xbb\xbfmodel: m\n")
    assert read_user_text(p) == "model: m\n"
    p.write_bytes("model: é\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=r"c\.yaml: not UTF-8 text \(it looks like Latin-1\).*iconv -f LATIN1"):
        read_user_text(p)
    big = tmp_path / "r.jsonl"
    big.write_bytes(("x" * 70000 + "é").encode("utf-16"))
    with pytest.raises(ConfigError, match="UTF-16"):
        check_user_encoding(big)


def test_a_duplicate_key_at_any_depth_names_it_and_both_lines(tmp_path: Path) -> None:
    p = tmp_path / "run.yaml"
    p.write_text("model: m\ntasks: {source: arithmetic}\ngrpo:\n  max_steps: 2\n  beta: 0.1\n  max_steps: 3\n")
    with pytest.raises(ConfigError, match=r"run\.yaml:6: duplicate key 'max_steps' \(first at line 4\)"):
        load_run_config(p)
    p.write_text("base: &b {source: arithmetic}\nmodel: m\ntasks: {<<: *b, params: {n: 2}}\n")  # a merge key is fine
    with pytest.raises(ConfigError, match="base: unknown key"):
        load_run_config(p)


def test_a_typo_d_task_field_names_the_field_it_means() -> None:
    doc = {"id": "t", "prompt": "p", "answr": 1, "verifier": "exact_match"}
    with pytest.raises(ConfigError, match=r"f:3: unknown task field 'answr' \(fix: did you mean 'answer'\?\)"):
        task_from_user_dict(doc, "f:3")
    with pytest.raises(ConfigError, match="a task's fields are id, prompt"):
        task_from_user_dict({**doc, "answer": 1}, "f")  # 'answer' is there: no field left that 'answr' means
    assert task_from_user_dict({**{k: v for k, v in doc.items() if k != "answr"}, "answer": 1}, "f").answer == 1


def test_output_paths(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("")
    check_output_file(tmp_path / "new" / "x.jsonl", "--out")
    check_output_file(tmp_path / "f", "--out")  # an existing file is overwritten, as asked
    check_output_dir(tmp_path / "d", "--output-dir")
    with pytest.raises(ConfigError, match="--out: .* is a directory"):
        check_output_file(tmp_path / "d", "--out")
    with pytest.raises(ConfigError, match="f is a file, so .* cannot be created below it"):
        check_output_file(tmp_path / "f" / "deeper" / "x", "--out")
    with pytest.raises(ConfigError, match="--output-dir: .* is a file"):
        check_output_dir(tmp_path / "f", "--output-dir")


def test_an_output_file_is_never_a_device_fifo_or_socket(tmp_path: Path) -> None:
    import os
    import socket

    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "to-fifo").symlink_to(tmp_path / "fifo")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "sock"))
        for name, kind in (("fifo", "a FIFO"), ("to-fifo", "a FIFO"), ("sock", "a socket")):
            with pytest.raises(ConfigError, match=f"--out: .*{name} is {kind}.*, not a regular file") as exc:
                check_output_file(tmp_path / name, "--out")
            assert "\n" not in str(exc.value)
    for device in ("/dev/null", "/dev/zero"):  # only looked at (stat): nothing is written or removed there
        with pytest.raises(ConfigError, match=f"{device} is a device"):
            check_output_file(device, "--html")
    check_output_file(tmp_path / "dangling", "--out")  # written as a new file
    check_output_dir(tmp_path, "--output-dir", ("new.json", "dangling"))
    with pytest.raises(ConfigError, match="--output-dir: .*fifo is a FIFO .* crossgym writes its fifo there"):
        check_output_dir(tmp_path, "--output-dir", ("metrics.json", "fifo"))
    assert (tmp_path / "fifo").exists() and os.path.exists("/dev/null")


@pytest.mark.parametrize(("kw", "words"), [
    ({"temperature": -1.0}, "--temperature: must be >= 0"), ({"temperature": float("inf")}, "--temperature"),
    ({"top_p": 0.0}, "--top-p: must be in (0, 1]"), ({"top_p": 1.5}, "--top-p"),
    ({"max_tokens": 0}, "--max-tokens: must be >= 1"), ({"n": 0}, "--n: must be in 1..10000"),
])
def test_sampling_out_of_range(kw: dict[str, float], words: str) -> None:
    with pytest.raises(ConfigError) as exc:
        check_sampling(**kw)  # type: ignore[arg-type]
    assert str(exc.value).startswith(words)


def test_the_local_model_path_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    for local in ("./m", "../m", "/m", "~/m", "~", "a/b/c", "runs/smollm2", "."):
        assert looks_local(local), local
    for hub in ("Qwen/Qwen2.5-0.5B-Instruct", "gpt2", "some/model"):
        assert not looks_local(hub), hub
    assert check_model_path("Qwen/Qwen2.5-0.5B-Instruct", "--model") == "Qwen/Qwen2.5-0.5B-Instruct"
    assert check_model_path("runs", "--model") == "runs"
    with pytest.raises(ConfigError, match="--model: no such model directory: runs/smollm2"):
        check_model_path("runs/smollm2", "--model")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert check_model_path("~/runs", "--model") == str(tmp_path / "runs")
    assert load_run_config_with(tmp_path, "model: ~/runs\n").model == str(tmp_path / "runs")


def load_run_config_with(tmp_path: Path, head: str):  # type: ignore[no-untyped-def]
    p = tmp_path / "run.yaml"
    p.write_text(head + "tasks: {source: arithmetic}\n")
    return load_run_config(p)


def test_a_typo_in_a_list_item_section_suggests_the_items_field(tmp_path: Path) -> None:
    p = tmp_path / "run.yaml"
    p.write_text("model: m\ntasks: {source: arithmetic}\nverifiers:\n  - nam: length\n")
    with pytest.raises(ConfigError, match=r"verifiers\.0\.nam: unknown key .*did you mean 'name'"):
        load_run_config(p)


def test_an_output_on_a_read_only_file_system_is_refused_before_the_work(tmp_path: Path) -> None:
    """`compat --out` on a read-only mount ran its checks (37 s), then refused the write and lost the results: the
    output's folder is checked for writing first. Run in a user and mount namespace of its own with a read-only
    bind mount of a temporary folder (nothing outside the test changes)."""
    import shutil
    import subprocess
    import sys

    if shutil.which("unshare") is None:
        pytest.skip("unshare is not installed")
    folder = tmp_path / "ro"
    folder.mkdir()
    script = (f"{{ mount --bind {folder} {folder} && mount -o remount,bind,ro {folder}; }} || exit 97; "
              f"{sys.executable} -c 'from crossgym.config.files import check_output_file as c; "
              f"c(\"{folder}/out.json\", \"--out\")'")
    done = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=60)
    if done.returncode == 97 or "unshare failed" in done.stderr or "Operation not permitted" in done.stderr:
        pytest.skip(f"no user and mount namespaces (or read-only bind mounts) here: {done.stderr.strip()[:120]}")
    assert done.returncode == 1 and "ConfigError: --out:" in done.stderr, done.stderr
    assert f"{folder} is not writable" in done.stderr and "(fix: " in done.stderr
