"""Built-in environments and task sources (generators, file loaders, bridges)."""
