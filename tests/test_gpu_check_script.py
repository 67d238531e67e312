"""scripts/gpu_check.sh, tested up to the GPU boundary: the --cpu dry run trains through crossgym's TRL backend
(single-turn and multi-turn tool_use) and writes its report; without a GPU the GPU mode stops with one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "gpu_check.sh"


def _run(*args: str, out: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHON": sys.executable, "OUT": str(out), "OMP_NUM_THREADS": "1"}
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=900, env=env,
                          cwd=ROOT)


def test_cpu_dry_run_trains_single_and_multi_turn_and_reports(tmp_path: Path) -> None:
    pytest.importorskip("trl")
    proc = _run("--cpu", out=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    runs = report["runs"]
    assert runs["single-turn hf"]["steps"] == 3 and runs["multi-turn tool_use hf"]["steps"] == 1
    assert all(r["median_step_s"] > 0 for r in runs.values())
    assert "single step 3/3: reward" in proc.stdout and "episodes" in proc.stdout


def test_gpu_mode_without_a_gpu_and_a_bad_flag_are_one_line(tmp_path: Path) -> None:
    pytest.importorskip("trl")
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible: the GPU mode would run for minutes")
    proc = _run(out=tmp_path)
    assert proc.returncode != 0 and "torch sees no CUDA device" in proc.stderr
    bad = _run("--frobnicate", out=tmp_path)
    assert bad.returncode == 2 and bad.stderr.startswith("usage:")
