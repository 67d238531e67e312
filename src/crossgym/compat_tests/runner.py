"""`crossgym compat`: run every check on what is installed in this environment and build the matrix document.

``build_matrix`` is the library entry (the pytest suites and ``make test`` use the same checks); ``run_compat_command``
is what the CLI calls: it prints the verifier x backend table (or JSON), writes ``--out`` and ``--html``, and exits 1
when a measured reward differs or a check fails.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import json
import logging
import os
import platform
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from crossgym.compat_tests.corpus import Sample, default_corpus_dir
from crossgym.compat_tests.drivers import INSTALLED, BackendInfo, backend_names, inspect_backend
from crossgym.compat_tests.matrix import SCHEMA_ID, cell_from_modes, summarize
from crossgym.compat_tests.parity import parity_ready, run_parity_batch, samples_for_mode
from crossgym.compat_tests.results import CheckResult
from crossgym.compat_tests.verdicts import VerdictCache
from crossgym.protocol.errors import BackendUnavailable, ConfigError
from crossgym.text.visible import visible

log = logging.getLogger(__name__)

CHECKS = ("conformance", "parity", "environments", "plans", "tokens", "consistency", "advantages")
CONFORMANCE_CHECKS = ("examples", "determinism", "garbage", "timeout", "frozen", "fresh_process")
Progress = Callable[[str], None]


def _checks(value: Sequence[str] | str | None) -> tuple[str, ...]:
    if not value:
        return CHECKS
    items = [c.strip() for v in ([value] if isinstance(value, str) else value) for c in v.split(",") if c.strip()]
    bad = [c for c in items if c not in CHECKS]
    if bad:
        raise ConfigError(f"unknown check(s) {', '.join(bad)}", where="--checks", fix=f"use {', '.join(CHECKS)}")
    return tuple(items)


def _verifier_names(selected: Sequence[str] | None) -> list[str]:
    from crossgym.plugins.manager import registry

    reg = registry("verifiers")
    for n in selected or ():
        reg.entry(n)  # unknown names fail here, with a suggestion
    return list(selected) if selected else reg.names()


def _verifier_row(name: str) -> tuple[dict[str, Any], str | None]:
    """The verifier's matrix row header, and why it cannot run here (None when it can)."""
    from crossgym.compat_tests.verifier_checks import unavailable_reason
    from crossgym.plugins.manager import registry

    entry = registry("verifiers").entry(name)
    row: dict[str, Any] = {"version": None, "dist": entry.dist, "conformance": {}}
    why = unavailable_reason(name)
    if why is None:
        row["version"] = str(getattr(registry("verifiers").load(name), "version", "")) or None
    return row, why


def _episodes_by_verifier(progress: Progress, verifiers: Sequence[str]) -> tuple[dict[str, list[Sample]], list[Any]]:
    from crossgym.compat_tests.env_checks import builtin_env_cases, episode_samples

    cases = builtin_env_cases()
    by: dict[str, list[Sample]] = {}
    for s in episode_samples(cases, verifiers):
        by.setdefault(s.task.verifier.name, []).append(s)
    progress(f"scripted episodes: {sum(len(v) for v in by.values())} from {len(cases)} environment cases")
    return by, cases


def build_matrix(backends: Sequence[str] | None = None, verifiers: Sequence[str] | None = None, *,
                 corpus: str | Path | None = None, checks: Sequence[str] | str | None = None,
                 garbage_tasks: int = 3, progress: Progress | None = None) -> dict[str, Any]:
    """Run the chosen checks here and return the matrix document (schema ``crossgym-compat/1``)."""
    from crossgym import __version__

    say = progress or (lambda msg: log.info("%s", msg))
    chosen = _checks(checks)
    start = time.monotonic()
    corpus_dir = default_corpus_dir(corpus)
    names = _verifier_names(verifiers)
    bnames = list(backends) if backends else backend_names()
    infos = {b: inspect_backend(b) for b in bnames}
    doc: dict[str, Any] = {"schema": SCHEMA_ID, "crossgym_version": __version__, "runs": [], "backends": {},
                           "verifiers": {}, "environments": {}, "matrix": {}}
    episodes, cases = _episodes_by_verifier(say, names) if {"parity", "environments"} & set(chosen) else ({}, [])
    samples: dict[str, tuple[list[Sample], dict[str, Any], int]] = {}
    cache = VerdictCache()  # each sample is scored once in this process, whichever check asks first

    available = []
    for name in names:
        row, why_not = _verifier_row(name)
        doc["verifiers"][name] = row
        if why_not:
            row["conformance"] = {c: CheckResult(c, "skip", why_not).to_dict() for c in
                                  CONFORMANCE_CHECKS}
            doc["matrix"][name] = {b: {"status": "skip", "detail": f"verifier unavailable: {why_not}",
                                       "install": None} for b in bnames}
        else:
            available.append(name)
    fresh = _FreshBatch(available, corpus_dir) if "conformance" in chosen else None
    for name in available:
        if "conformance" in chosen:
            say(f"verifier {name}: conformance")
            doc["verifiers"][name]["conformance"] = {
                k: r.to_dict() for k, r in _conformance(name, corpus_dir, garbage_tasks, cache).items()}
        if "parity" in chosen:
            say(f"verifier {name}: reference verdicts")
            samples[name] = _parity_samples(name, corpus_dir, episodes.get(name, []), garbage_tasks, cache)
    if fresh is not None:
        say(f"fresh interpreter: {len(available)} verifiers rebuilt from their specs")
        for name in available:
            doc["verifiers"][name]["conformance"]["fresh_process"] = fresh.check(name, cache).to_dict()
    log.debug("verdict cache: %d hits", cache.hits)
    if "parity" in chosen:
        for name, row in _parity_rows(samples, infos, say).items():
            doc["matrix"][name] = row

    for b, info in infos.items():
        entry = info.to_dict()
        entry["plans"], entry["tokens"] = {}, None
        if info.status == INSTALLED and "plans" in chosen:
            from crossgym.compat_tests.plans import check_plans

            say(f"backend {b}: plans")
            plans = _guard(functools.partial(check_plans, info), "plans")
            entry["plans"] = {k: r.to_dict() for k, r in plans.items()}
        if info.status == INSTALLED and "tokens" in chosen and info.capabilities.get("multi_turn"):
            say(f"backend {b}: token consistency")
            entry["tokens"] = _guard(functools.partial(_tokens, info), "tokens")["tokens"].to_dict()
        elif info.status == INSTALLED and "tokens" in chosen:
            entry["tokens"] = CheckResult("token_consistency", "skip",
                                          "n/a: the backend declares no multi-turn capability").to_dict()
        if info.status == INSTALLED and info.driver is not None and {"parity", "tokens"} & set(chosen):
            say(f"backend {b}: blend (per-part parity, mixed-batch tokens)")
            entry["blend"] = {k: r.to_dict() for k, r in _blend(info, chosen).items()}
        if info.status == INSTALLED and "consistency" in chosen and info.driver is not None:
            say(f"backend {b}: consistency (recorded rollouts, serve routes)")
            entry["consistency"] = {k: r.to_dict() for k, r in
                                    _guard(functools.partial(_consistency, info), "consistency").items()}
        if info.status == INSTALLED and "advantages" in chosen and info.driver is not None:
            from crossgym.compat_tests.advantages import check_advantages

            say(f"backend {b}: advantages (the framework's own advantage code per variant)")
            entry["advantages"] = {k: r.to_dict() for k, r in
                                   _guard(functools.partial(check_advantages, info.driver, b, corpus_dir),
                                          "advantages").items()}
        doc["backends"][b] = entry
    if "consistency" in chosen:
        from crossgym.compat_tests.consistency import check_nemo_gym

        say("serve: NeMo Gym shape")
        doc["consistency"] = {k: r.to_dict() for k, r in
                              _guard(lambda: {"nemo_gym": check_nemo_gym()}, "nemo_gym").items()}

    if "environments" in chosen:
        from crossgym.compat_tests.env_checks import check_environment

        for case in cases:
            say(f"environment {case.name}: conformance")
            doc["environments"][case.name] = {
                "checks": {k: r.to_dict() for k, r in _guard(functools.partial(check_environment, case), "env").items()}}

    doc["runs"].append({"python": platform.python_version(), "prefix": sys.prefix, "platform": platform.platform(),
                        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
                        "backends": [b for b, i in infos.items() if i.status == INSTALLED], "checks": list(chosen),
                        "corpus": str(corpus_dir) if corpus_dir else None,
                        "seconds": round(time.monotonic() - start, 1)})
    doc["summary"] = summarize(doc)
    return doc


def _consistency(info: BackendInfo) -> dict[str, CheckResult]:
    from crossgym.compat_tests.consistency import check_records, check_route

    out = _guard(lambda: {"records": check_records(info.driver, info.name)}, "records")
    out.update(_guard(lambda: {"route": check_route(info.driver)}, "route"))
    return out


def _blend(info: BackendInfo, chosen: Sequence[str]) -> dict[str, CheckResult]:
    """The blend corpus (compat_tests.blend): parity per part under parity, a mixed batch's ids under tokens."""
    from crossgym.compat_tests.blend import check_blend_parity, check_blend_tokens

    out: dict[str, CheckResult] = {}
    if "parity" in chosen:
        out.update(_guard(functools.partial(check_blend_parity, info.driver, info.name), "parity_blend"))
    if "tokens" in chosen and info.capabilities.get("multi_turn"):
        out.update(_guard(lambda: {"tokens_blend": check_blend_tokens(info.driver)}, "tokens_blend"))
    return out


def _tokens(info: BackendInfo) -> dict[str, CheckResult]:
    from crossgym.compat_tests.tokens import check_token_consistency

    return {"tokens": check_token_consistency(info.driver)}


def _guard(fn: Callable[[], dict[str, CheckResult]], label: str) -> dict[str, CheckResult]:
    try:
        return fn()
    except Exception as exc:  # a check that crashes is reported as an error, the run goes on
        log.debug("%s check crashed", label, exc_info=True)
        return {label: CheckResult(label, "error", f"{type(exc).__name__}: {exc}")}


def _conformance(name: str, corpus_dir: Path | None, garbage_tasks: int, cache: VerdictCache
                 ) -> dict[str, CheckResult]:
    """Every conformance check but fresh_process (``_FreshBatch`` runs that one for all verifiers at once)."""
    from crossgym.compat_tests.verifier_checks import conformance

    return conformance(name, corpus_dir, garbage_tasks=garbage_tasks, cache=cache, fresh=False)


class _FreshBatch:
    """The fresh-process check for several verifiers with ONE new interpreter, started before the other checks so
    it runs beside them; when that interpreter fails, each verifier gets its own (the error lands on its row)."""

    def __init__(self, names: Sequence[str], corpus_dir: Path | None) -> None:
        from crossgym.compat_tests.fresh import FreshRun
        from crossgym.compat_tests.verifier_checks import fresh_samples

        self.corpus_dir = corpus_dir
        self.slices: dict[str, tuple[int, int]] = {}
        pairs: list[Any] = []
        for name in names:
            try:
                got = fresh_samples(name, corpus_dir)
            except Exception:  # examples() broke: check_fresh_process reports it on its own
                log.debug("fresh samples of %s", name, exc_info=True)
                continue
            self.slices[name] = (len(pairs), len(pairs) + len(got))
            pairs += [(s.task, s.completion) for s in got]
        self.run: Any = FreshRun(pairs)
        self.verdicts: list[dict[str, Any]] | None = None

    def check(self, name: str, cache: VerdictCache) -> CheckResult:
        from crossgym.compat_tests.verifier_checks import check_fresh_process

        if self.run is not None:
            try:
                self.verdicts = self.run.result()
            except Exception as exc:
                log.info("the shared fresh interpreter failed (%s); one per verifier", exc)
            self.run = None
        there = None
        if self.verdicts is not None and name in self.slices:
            a, b = self.slices[name]
            there = self.verdicts[a:b]
        return _guard(lambda: {"fresh_process": check_fresh_process(name, self.corpus_dir, cache=cache, there=there)},
                      "fresh_process")["fresh_process"]


def _parity_samples(name: str, corpus_dir: Path | None, episodes: list[Sample], garbage_tasks: int,
                    cache: VerdictCache) -> tuple[list[Sample], dict[str, Any], int]:
    """A verifier's parity samples (examples, frozen corpus, scripted episodes, garbage), their reference verdicts,
    and how many were left out because the reference timed out or was too slow (see parity.SLOW_S)."""
    from crossgym.compat_tests.corpus import distinct_tasks, example_samples, garbage_samples, verifier_corpus
    from crossgym.compat_tests.verifier_checks import get_examples

    examples = get_examples(name)
    samples = (example_samples(examples) + verifier_corpus(name, corpus_dir) + episodes
               + garbage_samples(distinct_tasks(examples, garbage_tasks), corpus_dir, raw=False))
    return parity_ready(samples, cache)


def _parity_rows(samples: dict[str, tuple[list[Sample], dict[str, Any], int]], infos: dict[str, BackendInfo],
                 say: Progress) -> dict[str, dict[str, Any]]:
    """Matrix rows: per backend and mode, one batched driver call over every verifier's samples."""
    refs: dict[str, Any] = {}
    for _, r, _ in samples.values():
        refs.update(r)
    rows: dict[str, dict[str, Any]] = {name: {} for name in samples}
    for b, info in infos.items():
        if info.status != INSTALLED or info.driver is None:
            for name in samples:
                rows[name][b] = {"status": info.status, "install": info.install, "detail": info.reason}
            continue
        modes = [m for m in info.driver.modes if m == "single_turn" or info.capabilities.get("multi_turn", True)]
        per_mode: dict[str, dict[str, Any]] = {}
        for mode in modes:
            groups = {name: samples_for_mode(s, mode, declared=info.driver.declared_modes)
                      for name, (s, _, _) in samples.items()}
            say(f"parity x {b} ({mode}): {sum(len(g) for g in groups.values())} samples, {len(groups)} verifiers")
            per_mode[mode] = {}
            for name, result in run_parity_batch(b, info.driver, groups, mode, refs).items():
                result.timeouts = samples[name][2]
                per_mode[mode][name] = result.to_dict()
        for name in samples:
            rows[name][b] = {**cell_from_modes({m: per_mode[m][name] for m in modes}), "install": None}
    return rows


#: the frameworks stay offline and quiet while the checks drive them (set only where the user has not)
QUIET_ENV = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "DO_NOT_TRACK": "1",
             "VLLM_NO_USAGE_STATS": "1", "RAY_USAGE_STATS_ENABLED": "0", "WANDB_MODE": "disabled",
             "TOKENIZERS_PARALLELISM": "false", "TRL_EXPERIMENTAL_SILENCE": "1", "TRANSFORMERS_VERBOSITY": "error",
             "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TQDM_DISABLE": "1"}


def quiet_libraries() -> None:
    """Offline, no telemetry, no progress bars or FutureWarnings from the frameworks (CLI only)."""
    import os
    import warnings

    for k, v in QUIET_ENV.items():
        os.environ.setdefault(k, v)
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", message=".*experimental.*")


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Send what the frameworks print (OpenRLHF's and DeepSpeed's loggers write to stdout, child processes too) to
    stderr, at the file-descriptor level, for the duration."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no fd 1 (an embedding host): Python-level redirect only
        saved = None
    if saved is not None:
        os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _named_but_not_installed(backends: Sequence[str] | None) -> list[tuple[str, str, str | None]]:
    """(name, why, install) of each backend named on the command line whose packages are not installed."""
    from crossgym.plugins.manager import registry

    out = []
    for name in dict.fromkeys(backends or ()):
        entry = registry("backends").entry(name)  # an unknown name is one line with a suggestion
        missing = entry.missing_requirements()
        if missing:
            out.append((name, f"missing Python package(s): {', '.join(missing)}", entry.install))
    return out


def run_compat_command(backends: Sequence[str] | None = None, as_json: bool = False, html: Path | None = None,
                       out: Path | None = None, verifiers: Sequence[str] | None = None, corpus: Path | None = None,
                       checks: Sequence[str] | str | None = None) -> None:
    """The `crossgym compat` command: build the matrix, print it (table or JSON), write --out/--html; exit 1 when
    a measured reward differs or a check fails."""
    import typer

    from crossgym.compat_tests.render import render_html, render_text
    from crossgym.config.files import check_output_file

    check_output_file(out, "--out")
    check_output_file(html, "--html")
    if corpus is not None and not Path(corpus).expanduser().is_dir():
        raise ConfigError(f"{corpus} is {'a file' if Path(corpus).expanduser().exists() else 'not there'}; a "
                          "frozen corpus is a folder", where="--corpus",
                          fix="pass a folder such as tests/compat/corpus (python tests/compat/make_corpus.py writes one), "
                              "or drop --corpus")
    missing = _named_but_not_installed(backends)
    if backends and len(missing) == len(set(backends)):  # nothing to measure: not an empty "ok"
        name, why, install = missing[0]
        raise BackendUnavailable(name, f"not installed ({why}), so compat has nothing to check", install)
    quiet_libraries()

    start = time.monotonic()

    def say(msg: str) -> None:  # seconds since start: where a slow run spends its time
        typer.echo(visible(f"compat: {time.monotonic() - start:6.1f}s {msg}"), err=True)  # (it names checks)

    with _stdout_to_stderr() if as_json else contextlib.nullcontext():  # --json: stdout holds the document only
        doc = build_matrix(backends, verifiers, corpus=corpus, checks=checks, progress=say)
    text = json.dumps(doc, indent=2, ensure_ascii=True, default=str)
    if out is not None:
        _write(Path(out), text + "\n")
    if html is not None:
        _write(Path(html), render_html(doc))
    if as_json:
        sys.stdout.write(text + "\n")
    else:
        render_text(doc)
    if not doc["summary"]["ok"]:
        raise typer.Exit(1)
    if missing:  # a backend the user named was not checked: not a success
        sys.stderr.write("crossgym: error: not installed, so not checked: " + "; ".join(
            f"{n} ({why}{f'; install: {install}' if install else ''})" for n, why, install in missing) + "\n")
        raise typer.Exit(2)
