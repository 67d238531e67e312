"""`crossgym plan` on a terminal (issue 24, item 7): readable at the terminal's width (side by side when every
column fits, else one backend per block; nothing cropped, no backend dropped), `--backend trl,verl`, and a config
that does not fit a backend said so, not "not available here"."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from crossgym.cli import main
from crossgym.plugins.manager import registry

CONFIG = """model: some/model
tasks:
  source: arithmetic
  params: {n: 4}
grpo: {num_generations: 2, per_device_train_batch_size: 2, max_steps: 2%s}
output_dir: out
"""


def _plan(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exc:
        main(["plan", *argv])
    out, err = capsys.readouterr()
    assert exc.value.code in (0, None), err
    return out


@pytest.fixture()
def config(tmp_path: Path) -> Path:
    path = tmp_path / "run.yaml"
    path.write_text(CONFIG % "", encoding="utf-8")
    return path


def test_at_80_columns_every_backend_is_a_block_and_no_line_is_cropped(config: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    out = _plan([str(config)], capsys)
    lines = out.splitlines()
    assert lines[0].startswith("crossgym plan (one backend per block")
    assert max(len(line) for line in lines) <= 80
    headers = [line.split(" ")[0] for line in lines if re.fullmatch(r"\S+ ─+", line)]
    assert headers == registry("backends").names()  # each backend, verl too, in order
    block = out[out.index("\ntrl ─"):]
    assert "GRPOConfig:" in block and "  num_generations: 2" in block  # whole lines, not a cropped column


def test_a_wide_terminal_shows_them_side_by_side(config: Path, monkeypatch, capsys) -> None:
    names = registry("backends").names()
    monkeypatch.setenv("COLUMNS", str(len(names) * 43 + 1))
    lines = _plan([str(config)], capsys).splitlines()
    assert lines[0].strip() == "crossgym plan"
    head = lines[2]
    assert [cell.strip() for cell in head.strip("┃").split("┃")] == names
    assert lines[1].endswith("┓") and head.endswith("┃")  # the right border is there: nothing cropped


@pytest.mark.parametrize("flags", [["--backend", "trl,verl"], ["--backend", "trl", "--backend", "verl"],
                                   ["--backend", " trl , verl,"]])
def test_backend_takes_a_comma_list(config: Path, flags: list[str], capsys) -> None:
    doc = json.loads(_plan([str(config), *flags, "--json"], capsys))
    assert [p["backend"] for p in doc["plans"]] == ["trl", "verl"]


def test_a_comma_list_with_a_typo_is_one_line(config: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["plan", str(config), "--backend", "trl,verll"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and "verll" in err and "verl" in err


def test_a_config_that_does_not_fit_trl_says_so(tmp_path: Path, monkeypatch, capsys) -> None:
    """TRL is installed here; this loss_type is not one of its, so TRL's block says why the config does not fit
    (the other backends are planned beside it)."""
    path = tmp_path / "run.yaml"
    path.write_text(CONFIG % ", loss_type: dapoo", encoding="utf-8")
    monkeypatch.setenv("COLUMNS", "50")  # two notes need 55 columns side by side: blocks
    out = _plan([str(path), "--backend", "trl,verl"], capsys)
    block = " ".join(out[out.index("\ntrl ─"):out.index("\nverl ─")].split()[2:])  # the words, unwrapped
    assert block.startswith("this config does not fit TRL: ") and "did you mean 'dapo'" in block
    assert "not available here" not in block
