"""Plugin bases generic in their config: the class named as the parameter is the one validated."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from typing_extensions import TypeVar

from evalh_pipeline.evaluators.base import Evaluator, EvaluatorConfigModel, SyncEvaluator, Verdict
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace


class LengthConfig(EvaluatorConfigModel):
    limit: int


class LongerConfig(LengthConfig):
    unit: str = "chars"


class LengthAtMost(SyncEvaluator[LengthConfig]):
    def evaluate_sync(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        return Verdict(len(trace.output.final_answer or "") <= self.config.limit, "length")


LengthConfigT = TypeVar("LengthConfigT", bound=LengthConfig, default=LengthConfig)


class LengthFamily(SyncEvaluator[LengthConfigT]):
    def evaluate_sync(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        return Verdict(True, "")


class LongerLength(LengthFamily[LongerConfig]):
    pass


def test_the_generic_parameter_is_the_config_class_the_plugin_validates_with() -> None:
    assert LengthAtMost.Config is LengthConfig
    evaluator = LengthAtMost("short", "length_at_most", {"limit": 3})
    assert isinstance(evaluator.config, LengthConfig)
    assert evaluator.config.limit == 3
    with pytest.raises(ValidationError):
        LengthAtMost("short", "length_at_most", {"limit": 3, "limt": 4})


def test_a_base_generic_in_its_own_type_variable_validates_with_the_default_until_a_subclass_names_one() -> None:
    assert LengthFamily.Config is LengthConfig
    assert LongerLength.Config is LongerConfig
    assert LongerLength("l", "longer", {"limit": 1}).config.unit == "chars"
    assert Evaluator.Config is EvaluatorConfigModel
    assert SyncEvaluator.Config is EvaluatorConfigModel


def test_a_config_declared_both_as_parameter_and_as_class_attribute_is_refused() -> None:
    with pytest.raises(TypeError, match="declares its config twice"):
        class Twice(SyncEvaluator[LengthConfig]):
            Config = LongerConfig

            def evaluate_sync(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
                return Verdict(True, "")
