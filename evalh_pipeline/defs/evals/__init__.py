"""Per-eval asset groups: partitions, assets and jobs."""
