"""Unsloth backend: FastLanguageModel + LoRA, trained by TRL's GRPOTrainer with the TRL backend's shared code. Imports
unsloth inside functions only."""
