"""DuckDB SQL over a run's JSONL files: summary, compare, drift."""
