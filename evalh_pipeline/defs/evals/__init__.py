"""Per-eval asset groups: assets, checks, jobs and sensors."""
