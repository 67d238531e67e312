"""UnslothBackend: FastLanguageModel + LoRA, trained by TRL's GRPOTrainer through the TRL backend's own code.

Only the policy differs from the TRL backend: Unsloth loads the model (``FastLanguageModel.from_pretrained``) and
adds the adapters (``get_peft_model``); the dataset rows, reward functions, environment bridge (rollout_func),
GRPOConfig mapping and outputs are the TRL backend's, shared through subclassing (``load_policy`` is the seam).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from crossgym.adapters.kit import variants as kit_variants
from crossgym.adapters.trl import config_map
from crossgym.adapters.trl.backend import TRLBackend
from crossgym.adapters.unsloth.settings import UnslothSettings, trl_run, unsloth_settings, without_lora
from crossgym.protocol.errors import BackendUnavailable, ConfigError, CrossgymError
from crossgym.protocol.interfaces import (
    BackendCapabilities,
    Plan,
    ProgressFn,
    ResumePoint,
    StopSignal,
    TrainResult,
)

if TYPE_CHECKING:
    from crossgym.config import RunConfig
    from crossgym.protocol.task import Task

log = logging.getLogger(__name__)

INSTALL = "pip install 'crossgym[unsloth]' (in its own venv: see `nox -s unsloth`)"
SUPPORTED_UNSLOTH = ("2026.10.",)
#: unsloth 2026.10.9 pins trl<=1.15.0; GRPO in 1.15 takes the same GRPOConfig fields crossgym maps (1.16 adds none)
SUPPORTED_TRL = ("1.15.", "1.16.")


class UnslothBackend(TRLBackend):
    """GRPO with Unsloth: its fast loader and LoRA (4-bit and vLLM fast_inference on GPU), TRL's GRPOTrainer."""

    name = "unsloth"
    capabilities = BackendCapabilities(multi_turn=True, lora=True, engines=("hf", "vllm"), distributed=False,
                                       needs_gpu=False, variants=kit_variants.SUPPORTED["unsloth"], stop="step",
                                       resume=True)
    compat_driver = "crossgym.adapters.unsloth.parity"

    def __init__(self) -> None:
        super().__init__()
        #: What the last build_trainer() loaded with (from_pretrained and get_peft_model arguments).
        self.settings: UnslothSettings | None = None

    def check(self) -> None:
        """BackendUnavailable with the install command when unsloth, trl or torch are missing or unsupported."""
        missing = [m for m in ("unsloth", "unsloth_zoo", "trl", "torch", "datasets")
                   if importlib.util.find_spec(m) is None]
        if missing:
            raise BackendUnavailable(self.name, f"missing Python package(s): {', '.join(missing)}", INSTALL)
        version = importlib.metadata.version("unsloth")
        if not version.startswith(SUPPORTED_UNSLOTH):
            raise BackendUnavailable(self.name, f"crossgym's Unsloth backend supports unsloth 2026.10.x, found "
                                     f"{version}", "pip install unsloth==2026.10.9 unsloth-zoo==2026.10.9")
        trl_version = importlib.metadata.version("trl")
        if not trl_version.startswith(SUPPORTED_TRL):
            raise BackendUnavailable(self.name, f"crossgym's Unsloth backend runs with trl 1.15/1.16, found "
                                     f"{trl_version}", "pip install 'trl==1.15.0'")

    # ------------------------------------------------------------ plan
    def plan(self, run: RunConfig, *, tasks: Sequence[Task] | None = None, resume_of: RunConfig | None = None
             ) -> Plan:
        """The Unsloth loader and LoRA arguments, then the GRPOConfig and trainer the TRL backend would build."""
        # engine: vllm is planned for a CUDA machine even here (the TRL backend's plan says so in its notes)
        device = "cuda" if run.engine == "vllm" else config_map.detect_device()
        settings = unsloth_settings(run, device=device)
        # the TRL backend's plan without a peft_config: the adapters come from get_peft_model
        base = super().plan(without_lora(trl_run(run)), tasks=tasks, resume_of=resume_of or run)
        trainer = dict(base.native_config["GRPOTrainer"], model="FastLanguageModel.from_pretrained(...) + "
                       "get_peft_model(...)", processing_class="its tokenizer")
        native = {"FastLanguageModel.from_pretrained": settings.from_pretrained,
                  "FastLanguageModel.get_peft_model": settings.peft, "GRPOConfig": base.native_config["GRPOConfig"],
                  "GRPOTrainer": trainer, "GRPOTrainer.train": base.native_config["GRPOTrainer.train"]}
        script = unsloth_script(settings, base.files.get("train_trl.py", ""))
        return Plan(backend=self.name, native_config=native, argv=("python", "train_unsloth.py"),
                    files={"train_unsloth.py": script}, notes=(*settings.notes, *base.notes))

    # ------------------------------------------------------------ train
    def preload(self) -> None:
        """Import unsloth before anything loads transformers (``crossgym train`` calls this before its eval gate)."""
        import_unsloth(self)

    def train(self, run: RunConfig, *, tasks: Sequence[Task] | None = None, progress: ProgressFn | None = None,
              stop: StopSignal | None = None, callbacks: Sequence[Any] = ()) -> TrainResult:
        """The TRL backend's train (metrics.jsonl, reward_curve.png, rollouts.jsonl, final/ with the LoRA adapter)."""
        import_unsloth(self)
        return super().train(run, tasks=tasks, progress=progress, stop=stop, callbacks=callbacks)

    def build_trainer(self, run: RunConfig, *, tasks: Sequence[Task] | None = None,
                      callbacks: Sequence[Any] = (), record_rollouts: bool = True,
                      resume: ResumePoint | None = None) -> Any:
        """A ready GRPOTrainer on Unsloth's LoRA model (tasks loaded from the config when not given)."""
        import_unsloth(self)
        device = config_map.detect_device()
        self.settings = unsloth_settings(run, device=device)
        return super().build_trainer(trl_run(run), tasks=tasks, callbacks=callbacks,
                                     record_rollouts=record_rollouts, resume=resume)

    def load_policy(self, run: RunConfig) -> tuple[Any, Any, Any]:
        """(LoRA model, tokenizer, None) from Unsloth: the adapters are already on the model, so no peft_config."""
        settings = self.settings or unsloth_settings(run, device=config_map.detect_device())
        fp = dict(settings.from_pretrained)
        if fp["load_in_4bit"] and config_map.detect_device() == "cpu" and not _cpu_4bit_works():
            raise ConfigError("load_in_4bit needs a GPU here: bitsandbytes' CPU 4-bit backend does not run on this "
                              "machine", where="backend_args.load_in_4bit", fix="set it to false on CPU")
        from unsloth import FastLanguageModel

        try:
            model, tokenizer = FastLanguageModel.from_pretrained(**fp)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"Unsloth could not load the model: {str(exc).splitlines()[0]}", where="model",
                              fix="check the model path (a local directory with config.json)") from exc
        except NotImplementedError as exc:  # Unsloth's own "needs a GPU" refusals
            raise ConfigError(str(exc).splitlines()[0], where="backend_args",
                              fix="drop the GPU-only option on CPU") from exc
        model = FastLanguageModel.get_peft_model(model, **settings.peft)
        log.info("unsloth: %s with LoRA r=%s (4-bit %s, fast_inference %s)", type(model).__name__,
                 settings.peft["r"], fp["load_in_4bit"], fp["fast_inference"])
        return model, tokenizer, None


def import_unsloth(backend: UnslothBackend) -> None:
    """Import unsloth after checking it is there; before transformers, peft and trl where possible, since it
    patches them as they load (it warns when they came first, and still works)."""
    backend.check()
    import unsloth  # noqa: F401


def _cpu_4bit_works() -> bool:
    """Whether bitsandbytes' NF4 layer runs forward and backward on this CPU (Unsloth's own probe)."""
    try:
        from unsloth_zoo.cpu.runtime import cpu_bnb_4bit_supported
    except ImportError:
        return False
    return bool(cpu_bnb_4bit_supported())


def unsloth_script(settings: UnslothSettings, trl_script: str) -> str:
    """The plain TRL script with Unsloth's loader in front: the model and tokenizer come from FastLanguageModel."""
    import pprint
    import re

    fp = pprint.pformat(settings.from_pretrained, width=100, sort_dicts=False)
    peft = pprint.pformat(settings.peft, width=100, sort_dicts=False)
    head = ('"""Plain Unsloth + TRL equivalent of a crossgym RunConfig (generated by `crossgym plan --backend '
            'unsloth`)."""\nimport unsloth  # first: it patches transformers, peft and trl\n'
            "from unsloth import FastLanguageModel\n\n"
            f"model, tokenizer = FastLanguageModel.from_pretrained(**{fp})\n"
            f"model = FastLanguageModel.get_peft_model(model, **{peft})\n\n")
    body = trl_script.split('"""', 2)[-1].lstrip("\n") if trl_script.startswith('"""') else trl_script
    # GRPOTrainer(model='path', ...) -> GRPOTrainer(model=model, processing_class=tokenizer, ...)
    body, n = re.subn(r"GRPOTrainer\(model=('[^']*'|\"[^\"]*\")", "GRPOTrainer(model=model, processing_class=tokenizer",
                      body, count=1)
    if n != 1:
        raise CrossgymError("the TRL backend's plain script has no GRPOTrainer(model=...) call to hand the Unsloth "
                            "model to")
    return head + body


__all__ = ["UnslothBackend"]
