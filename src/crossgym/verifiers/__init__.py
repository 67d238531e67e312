"""Built-in verifiers, one module per family."""
