"""Text a policy, a dataset or a sandboxed program wrote (completions, reasons, task ids, sources, metadata) reaches
reports, terminals and logs as text: no element or attribute of its own in HTML, no escape sequence or line of its
own on a terminal or in a log, and one JSON line per record. Normal text prints as it is."""

from __future__ import annotations

import json
import logging
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from crossgym.protocol import Completion, Rollout, Task, Verdict, VerifierSpec
from crossgym.text import visible

#: what a policy could learn to emit: markup, script breakouts, template syntax, terminal sequences (colour and
#: erase, OSC 8 hyperlink, OSC 52 clipboard write), CR and backspace overwrites, a forged line, a bidi override,
#: separators that break lines to some readers, matplotlib math
PAYLOADS = ['<script>alert(1)</script>', '"><img src=x onerror=alert(1)>', "'><svg onload=alert(1)>",
            '</script><script>alert(2)</script>', 'javascript:alert(1)', '{{7*7}}', '<!-- x', 'a\u2028b\u2029c',
            '\x1b]8;;http://evil.example\x07click\x1b]8;;\x07', '\x1b[2J\x1b]52;c;SGk=\x07', 'x\nERROR forged',
            'r\roverwrite\b\b\x7f', '\u202etxt.exe', '\x9b31m', '$\\frac{$', '_hidden']
#: characters that must never reach a terminal raw (the newline: where one line is printed)
RAW = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
#: the markup crossgym's own pages use; anything else came from a payload
OWN_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "b", "small", "br", "table",
            "tr", "th", "td", "pre", "code", "details", "summary", "div", "ul", "li", "img"}
OWN_ATTRS = {"charset", "src", "alt", "style", "title", "class"}


class _Markup(HTMLParser):
    """Every tag, attribute and comment of a page, and whether any is not crossgym's own."""

    def __init__(self) -> None:
        super().__init__()
        self.foreign: list[object] = []
        self.imgs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in OWN_TAGS:
            self.foreign.append(tag)
        for name, value in attrs:
            if name not in OWN_ATTRS or (value or "").strip().lower().startswith(("javascript:", "data:")):
                self.foreign.append((tag, name, value))
        if tag == "img":
            self.imgs.append(dict(attrs).get("src") or "")

    def handle_comment(self, data: str) -> None:
        self.foreign.append(("comment", data))


def _foreign_markup(page: str) -> list[object]:
    parser = _Markup()
    parser.feed(page)
    parser.close()
    assert all(src.endswith(".png") and "/" not in src for src in parser.imgs)  # only the report's own plots
    return parser.foreign


def _rollouts() -> list[Rollout]:
    """Two samples of a task per payload (one passes), the payload in every text field; errors and failures."""
    out = []
    for i, p in enumerate(PAYLOADS):
        task = Task(id=f"id{i} {p}", prompt=f"prompt {p}", answer=None, verifier=VerifierSpec("v"),
                    metadata={"source": f"src {p}", "note": p})
        failed = Verdict.exception(f"boom {p}") if i % 2 else Verdict.ok(0.0, reason=f"wrong {p}")
        out += [Rollout(task=task, completion=Completion.from_text(f"comp {p}"), verdict=failed),
                Rollout(task=task, completion=Completion.from_text(f"comp {p}"), verdict=Verdict.ok(1.0, reason=p))]
    return out


# ---------------------------------------------------------------- visible()
def test_visible_escapes_what_a_terminal_obeys() -> None:
    assert visible("\x1b[31mred\x1b[0m") == "\\x1b[31mred\\x1b[0m"
    assert visible("\x1b]8;;http://x\x07a\x1b]8;;\x07") == "\\x1b]8;;http://x\\x07a\\x1b]8;;\\x07"
    assert visible("\x1b]52;c;SGk=\x07") == "\\x1b]52;c;SGk=\\x07"
    assert visible("a\rb\bc\x7fd\x9be") == "a\\rb\\x08c\\x7fd\\x9be"
    assert visible("x\nERROR forged") == "x\\nERROR forged"
    assert visible("\u202etxt.exe \u2066a\u2069 \u200f") == "\\u202etxt.exe \\u2066a\\u2069 \\u200f"
    assert visible("a\u2028b\u2029c\x85") == "a\\u2028b\\u2029c\\x85"
    assert visible(7) == "7"


def test_visible_keeps_normal_text() -> None:
    for text in ("plain ascii", "naïve café 東京 Привет مرحبا", "emoji 👩\u200d💻 🇫🇷", "tab\tseparated",
                 r"C:\path\x1b and \frac{1}{2}", "nbsp\u00a0and\u200bzero width", "", "\ud800 lone surrogate"):
        assert visible(text) == text
    assert visible("line 1\nline 2\r\n\x1b", lines=True) == "line 1\nline 2\\r\n\\x1b"


# ---------------------------------------------------------------- HTML
def test_eval_report_holds_no_markup_from_rollouts(tmp_path: Path) -> None:
    """A source named ``$\\frac{$`` was matplotlib math: ValueError at savefig, no report (after the whole eval)."""
    from crossgym.eval.metrics import compute_metrics
    from crossgym.eval.report import write_report

    rollouts = _rollouts()
    metrics = compute_metrics(rollouts)
    page = write_report(tmp_path, metrics, rollouts,
                        run_info={"model": PAYLOADS[1], "extra": {"k": PAYLOADS[3]}}).read_text(encoding="utf-8")
    assert _foreign_markup(page) == []
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&quot;&gt;&lt;img src=x onerror" in page


def test_compare_page_holds_no_markup_from_rollouts(tmp_path: Path) -> None:
    from crossgym.eval.compare import compare_runs, load_run, write_html

    doc = compare_runs(load_run(_store(tmp_path / "a.jsonl", passed=True)),
                       load_run(_store(tmp_path / "b.jsonl", passed=False)))
    assert doc["flips"]["pass_to_fail"] == len(PAYLOADS)
    page = write_html(doc, tmp_path / "cmp.html").read_text(encoding="utf-8")
    assert _foreign_markup(page) == []


def _compat_doc() -> dict[str, object]:
    x = "".join(PAYLOADS)
    check = {"status": "fail", "detail": x}
    return {"crossgym_version": x, "summary": {"ok": False, "failed_checks": [f"check {x}"]},
            "runs": [{"created": x, "python": x, "prefix": x, "backends": [x], "seconds": x}],
            "backends": {"b" + x: {"status": "missing", "install": x, "reason": x, "framework_version": x,
                                   "driver": {"module": x}, "tokens": {"status": "skip", "detail": x},
                                   "plans": {x: {"status": "fail"}}, "advantages": {x: dict(check)},
                                   "blend": {x: {**check, "extra": {"parts": {x: 1}}}}}},
            "verifiers": {"v" + x: {"conformance": {x: dict(check)}}},
            "matrix": {"v" + x: {"b" + x: {"status": "mismatch", "detail": x, "compared": 2, "mismatches": 1,
                                           "first_mismatch": {"why": x, "sample": x, "mode": x, "completion": x}}}},
            "environments": {"e" + x: {"checks": {x: dict(check)}}}}


def test_compat_page_holds_no_markup_from_details() -> None:
    from crossgym.compat_tests.render import render_html

    assert _foreign_markup(render_html(_compat_doc())) == []


# ---------------------------------------------------------------- terminal
def _assert_terminal_safe(lines: list[str]) -> None:
    for line in lines:
        assert not RAW.search(line), repr(line)


def test_eval_summary_prints_no_control_characters() -> None:
    from crossgym.eval.command import summary_lines
    from crossgym.eval.metrics import compute_metrics

    metrics = compute_metrics(_rollouts())
    metrics["run"] = {"model": "m\x1b[31m", "engine": "e\rX"}
    lines = summary_lines(metrics)
    _assert_terminal_safe(lines)
    assert any("src x\\nERROR forged" in line for line in lines)
    assert any("source src {{7*7}}" in line for line in lines)  # normal text as it was


def test_compare_summary_prints_no_control_characters(tmp_path: Path) -> None:
    from crossgym.eval.compare import compare_runs, load_run, summary_lines

    doc = compare_runs(load_run(_store(tmp_path / "a.jsonl", passed=True)),
                       load_run(_store(tmp_path / "b.jsonl", passed=False)))
    _assert_terminal_safe(summary_lines(doc))


def test_compat_text_prints_no_control_characters_or_markup(capsys: pytest.CaptureFixture[str]) -> None:
    from crossgym.compat_tests.render import render_text

    render_text(_compat_doc())
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out
    assert not any(line.startswith("ERROR forged") for line in out.splitlines())


def test_check_prints_no_control_characters_or_markup(capsys: pytest.CaptureFixture[str]) -> None:
    from crossgym.cli_render import render_check

    evil = "\x1b]52;c;SGk=\x07[link=https://evil.example]x[/link]\nWRONG forged"
    render_check({"verifiers": [{"name": "v" + evil, "ok": False, "error": evil,
                                 "examples": [{"ok": False, "expect": "pass", "got": "fail", "reward": 0.0,
                                               "reason": evil}]}]})
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "[link=https://evil.example]" in out
    assert not any(line.startswith("WRONG forged") for line in out.splitlines())


def test_reverify_lists_drift_in_one_line_each(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from crossgym.cli import main

    name = "evil\x1b[31m\nERROR forged"
    rollout = Rollout(task=Task(id="t\x1b]52;c;SGk=\x07", prompt="q", answer="4", verifier=VerifierSpec(name)),
                      completion=Completion.from_text("4"), verdict=Verdict.ok(1.0))
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(rollout.to_dict()) + "\n", encoding="utf-8")
    with pytest.raises(SystemExit):
        main(["reverify", str(path)])
    out = capsys.readouterr().out
    _assert_terminal_safe(out.splitlines())
    assert "evil\\x1b[31m\\nERROR forged" in out


def test_user_error_line_shows_control_characters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from crossgym.cli import main

    with pytest.raises(SystemExit):
        main(["check", "no\x1b[2J\rsuch"])
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err and "\r" not in err and "no\\x1b[2J\\rsuch" in err


# ---------------------------------------------------------------- logs and JSON lines
def test_log_lines_without_a_handler_show_control_characters(capsys: pytest.CaptureFixture[str]) -> None:
    """crossgym configures no handler: its warnings go to logging.lastResort, which the CLI makes escape them."""
    from crossgym.cli import _VisibleLastResort

    handler = _VisibleLastResort()
    record = logging.LogRecord("crossgym.rollout.driver", logging.WARNING, __file__, 1, "task %s sample %d: %s",
                               ("x\nERROR fake", 0, "\x1b]8;;http://evil\x07why"), None)
    handler.handle(record)
    try:
        raise ValueError("boom \x1b[2J")
    except ValueError:
        handler.handle(logging.LogRecord("crossgym", logging.WARNING, __file__, 1, "failed: %s", ("café",),
                                         sys.exc_info()))
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert lines[0] == "task x\\nERROR fake sample 0: \\x1b]8;;http://evil\\x07why"
    assert lines[1] == "failed: café" and lines[2].startswith("Traceback") and "\x1b" not in err


def test_cli_installs_the_escaping_last_resort(capsys: pytest.CaptureFixture[str]) -> None:
    from crossgym.cli import _VisibleLastResort, main

    with pytest.raises(SystemExit):
        main(["--version"])
    assert isinstance(logging.lastResort, _VisibleLastResort)


def test_jsonl_records_stay_one_line_each(tmp_path: Path) -> None:
    """json.dumps escapes every C0 control; U+2028, U+2029 and U+0085 stay raw (ensure_ascii=False), and the
    readers split on b"\\n" only, so each record is still one line read back whole."""
    from crossgym.scoring.records import dumps_record, iter_numbered_records

    text = "".join(dumps_record(r.to_dict()) for r in _rollouts())
    assert text.count("\n") == len(_rollouts()) and "\x1b" not in text and "\r" not in text
    path = tmp_path / "r.jsonl"
    path.write_text(text, encoding="utf-8")
    docs = [doc for _, doc in iter_numbered_records(path)]
    assert [d["completion"] for d in docs] == [r.to_dict()["completion"] for r in _rollouts()]


def _store(path: Path, *, passed: bool) -> Path:
    from crossgym.scoring.records import dumps_record

    rows = [Rollout(task=r.task, completion=r.completion, verdict=Verdict.ok(float(passed), reason=r.verdict.reason))
            for r in _rollouts()[::2]]
    path.write_text("".join(dumps_record(r.to_dict()) for r in rows), encoding="utf-8")
    return path
