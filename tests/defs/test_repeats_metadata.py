"""The summary asset's metadata with several samples per case: pass@k and pass^k of each
repeated variant as numbers, its flaky-case count and the report section; nothing for a
run with one sample per case."""

from __future__ import annotations

from datetime import datetime, timezone

import dagster as dg

from evalh_pipeline.defs.evals.metadata import repeats_metadata
from evalh_pipeline.models.summary import RepeatStats, RunSummary, VariantSummary


def _summary(*variants: VariantSummary) -> RunSummary:
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    return RunSummary(run_id="r1", started_at=now, finished_at=now, config_path="eval.yaml", config_hash="h",
                      cases_total=2, variants=list(variants), by_evaluator=[])


def _variant(name: str, repeats: RepeatStats | None) -> VariantSummary:
    return VariantSummary(name=name, cases_total=2, cases_passed=1, cases_errored=0, pass_rate=0.5,
                          avg_latency_ms=1.0, repeats=repeats)


def test_each_repeated_variant_gives_its_pass_at_k_pass_hat_k_and_flaky_cases():
    repeats = RepeatStats(samples_per_case=3, pass_at_k={1: 0.5, 3: 0.75}, pass_hat_k={1: 0.5, 3: 0.25},
                          case_pass_fractions={"1/3": 1, "3/3": 1}, flaky_cases=["c1"])
    meta = repeats_metadata(_summary(_variant("base", repeats), _variant("single", None)))
    assert meta["pass_at_3/base"] == dg.MetadataValue.float(0.75)
    assert meta["pass_hat_3/base"] == dg.MetadataValue.float(0.25)
    assert meta["flaky_cases/base"] == 1
    assert not any(key.endswith("/single") for key in meta)  # one sample per case: no figures
    assert isinstance(meta["repeats"], dg.MarkdownMetadataValue) and "base" in meta["repeats"].value


def test_a_run_with_one_sample_per_case_has_no_repeats_metadata():
    assert repeats_metadata(_summary(_variant("base", None))) == {}
