"""Backend test tiers whose pins conflict with the default venv: one nox session (and venv) per backend.

`make test` runs them all after the default tier. Each session installs torch==2.13.0 (the local CPU wheel)
FIRST, so that no package pulls a multi-GB CUDA build, then the framework with its measured recipe, then crossgym.
"""

from __future__ import annotations

import os

import nox

nox.options.default_venv_backend = "venv"
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True

TORCH = "torch==2.13.0"
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1", "RAY_USAGE_STATS_ENABLED": "0", "WANDB_MODE": "disabled", "OMP_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false", "TRL_EXPERIMENTAL_SILENCE": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
}


def _pytest(session: nox.Session, *paths: str) -> None:
    args = session.posargs or list(paths)
    session.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, env=OFFLINE_ENV)


def _base(session: nox.Session) -> None:
    session.install("--upgrade", "pip")
    session.install(TORCH)


# Each backend session is filled in by its issue; a session with nothing to test yet is skipped honestly.
BACKEND_TESTS = {
    "verl": "tests/adapters/verl",
    "openrlhf": "tests/adapters/openrlhf",
    "unsloth": "tests/adapters/unsloth",
}


def _has_tests(path: str) -> bool:
    return os.path.isdir(path) and any(n.startswith("test_") for n in os.listdir(path))
