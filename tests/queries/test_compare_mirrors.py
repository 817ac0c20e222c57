"""The plain dataclasses of queries/compare.py mirror the DataModel's summary models field for field.

They exist so `evalh compare` need not import pydantic; this keeps them from drifting apart.
"""

from __future__ import annotations

from dataclasses import fields

import pytest

from evalh_pipeline.models import ComparisonReport, VariantDelta, VariantSummary
from evalh_pipeline.queries.compare import Comparison, Flips, VariantFigures


@pytest.mark.parametrize(("mirror", "model"), [
    (VariantFigures, VariantSummary),
    (Flips, VariantDelta),
    (Comparison, ComparisonReport),
])
def test_each_mirror_has_the_models_fields_in_order(mirror, model):
    assert [f.name for f in fields(mirror)] == list(model.model_fields)
