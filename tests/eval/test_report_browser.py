"""report.html in a real browser: headless Chromium (Debian's chromium-headless-shell or chromium) renders it and
takes a screenshot; the test reads the pixels back. Skipped where no Chromium is installed (the manual check in
docs/eval.md says how to look at a report yourself)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from crossgym.eval.metrics import compute_metrics
from crossgym.eval.report import COLORS, write_report
from crossgym.protocol import Completion, Rollout, Task, Verdict, VerifierSpec

BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome", "headless_shell")
WIDTH, HEIGHT = 1100, 6000


def _browser() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no headless Chromium here (apt-get install chromium-headless-shell)")


def _rollouts() -> list[Rollout]:
    out = []
    for i in range(6):  # a 0-1 source, partly solved
        task = Task(id=f"a{i}", prompt="p", answer=1, verifier=VerifierSpec("numeric"), metadata={"source": "arith"})
        for k in range(3):
            out.append(Rollout(task=task, completion=Completion.from_text("<answer>1</answer>"),
                               verdict=Verdict.ok(1.0) if (i + k) % 3 == 0 else Verdict.ok(0.0)))
    for i in range(6):  # a 0-2 source whose verifier sometimes breaks
        task = Task(id=f"j{i}", prompt="p", answer={"x": 1}, verifier=VerifierSpec("json_answer"),
                    metadata={"source": "json"})
        out.append(Rollout(task=task, completion=Completion.from_text("{}"), verdict=Verdict.ok(1.5, passed=False)))
        out.append(Rollout(task=task, completion=Completion.from_text("{}"), verdict=Verdict.timeout(2.0)))
    return out


def _pixels(png: Path) -> set[tuple[int, int, int]]:
    import numpy as np
    from PIL import Image

    with Image.open(png) as im:
        rgb = np.asarray(im.convert("RGB")).reshape(-1, 3).astype(np.uint32)
    packed = np.unique((rgb[:, 0] << 16) | (rgb[:, 1] << 8) | rgb[:, 2])
    return {(int(v) >> 16, (int(v) >> 8) & 255, int(v) & 255) for v in packed}


def _rgb(hex_color: str) -> tuple[int, int, int]:
    return int(hex_color[1:3], 16), int(hex_color[3:5], 16), int(hex_color[5:7], 16)


def test_the_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    browser = _browser()
    report = write_report(tmp_path, compute_metrics(_rollouts()), _rollouts(), run_info={"model": "tiny"})
    shot = tmp_path / "shot.png"
    proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--window-size={WIDTH},{HEIGHT}", f"--screenshot={shot}", report.as_uri()],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-2000:]
    seen = _pixels(shot)
    assert _rgb("#fff8e1") in seen  # the "what to do next" box is drawn
    for outcome in ("passed", "model", "infra"):  # the per-source panels loaded: their bar colours are on screen
        assert _rgb(COLORS[outcome]) in seen, outcome
