"""Evaluators: one module per type, plus the registry."""
