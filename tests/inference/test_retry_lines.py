"""The openai engine's retry messages (issue 24, item 6): one line per kind of failure, not one per retry of
every request in flight (the dead-endpoint case end to end is in tests/user_errors/test_feedback.py)."""

from __future__ import annotations


def test_the_retry_line_comes_back_after_the_server_answered(engine_server) -> None:  # type: ignore[no-untyped-def]
    """Once a request succeeds, a later failure is reported again (a new outage is news)."""
    import logging

    from crossgym.inference.openai_engine import OpenAIEngine
    from crossgym.protocol import Message, SamplingParams

    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep(level=logging.DEBUG)
    log = logging.getLogger("crossgym.inference.http")
    log.addHandler(handler)
    old = log.level
    log.setLevel(logging.DEBUG)
    try:
        engine = OpenAIEngine(f"{engine_server.url}/v1", model="tiny", backoff=0.01, max_retries=3)
        prompt = [[Message("user", "hi")]]
        greedy = SamplingParams(temperature=0.0, max_tokens=2)
        engine_server.fail_next(3, 503)
        engine.generate(prompt, 1, greedy)
        engine_server.fail_next(1, 503)
        engine.generate(prompt, 1, greedy)
    finally:
        log.removeHandler(handler)
        log.setLevel(old)
    warnings = [r for r in records if r.levelno == logging.WARNING]
    assert len(warnings) == 2 and all("retrying up to 3 times" in r.getMessage() for r in warnings)
    assert len([r for r in records if r.levelno == logging.DEBUG and "retry" in r.getMessage()]) == 2
