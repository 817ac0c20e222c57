"""Systems under test: one module per adapter type, plus the registry."""
