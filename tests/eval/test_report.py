"""report.html and its PNG plots."""

from __future__ import annotations

from crossgym.eval.metrics import compute_metrics
from crossgym.eval.report import PLOTS, write_report
from crossgym.protocol import Completion, Rollout, Task, Verdict, VerifierSpec


def test_report_with_plots_and_escaped_samples(tmp_path):
    rollouts = [Rollout(task=Task(id=f"t{i}", prompt="Say <b>hi</b>", answer=None, verifier=VerifierSpec("v"),
                                  metadata={"source": "s1" if i % 2 else "s2"}),
                        completion=Completion.from_text("<script>alert(1)</script>" if i == 0 else "ok"),
                        verdict=Verdict.ok(float(i % 3 == 0)))
                for i in range(6) for _ in range(2)]
    metrics = compute_metrics(rollouts)
    html_path = write_report(tmp_path, metrics, rollouts, run_info={"model": "tiny", "engine": "hf"})
    import matplotlib.image

    for name in PLOTS.values():
        png = tmp_path / name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert matplotlib.image.imread(png).shape[0] > 100
    text = html_path.read_text()
    for name in PLOTS.values():
        assert f'src="{name}"' in text
    assert "<script>alert" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "s1" in text and "s2" in text and "pass@1" in text
