"""Evaluation before training: ``run_eval`` (eval.run), metrics (eval.metrics), report.html (eval.report), the
eval-first gate ``run_gate`` (eval.gate), and the `crossgym eval` / `crossgym reverify` commands."""
