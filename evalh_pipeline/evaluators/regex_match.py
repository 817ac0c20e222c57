"""``regex_match``: a regular expression must (or must not) match a trace field."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator

from evalh_pipeline.evaluators.base import EvaluatorConfigModel, EvaluatorContext, SyncEvaluator, Verdict
from evalh_pipeline.common.fields import FieldPath, as_text, check_field_path
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace

_FLAGS = {"ignorecase": re.IGNORECASE, "multiline": re.MULTILINE, "dotall": re.DOTALL}
_SHOWN = 200  # characters of matched text kept in detail; the span locates the rest


class RegexMatchConfig(EvaluatorConfigModel):
    pattern: str
    field: str = "output.final_answer"
    flags: list[Literal["ignorecase", "multiline", "dotall"]] = Field(default_factory=list)
    must_match: bool = True
    match: Literal["search", "fullmatch"] = "search"

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        # Compiled here so a broken pattern is a load-time error, not a failure on every trace.
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"invalid regular expression /{value}/: {exc}") from None
        return value

    @field_validator("field")
    @classmethod
    def _parsable(cls, value: str) -> str:
        return check_field_path(value)


class RegexMatch(SyncEvaluator[RegexMatchConfig]):
    """Python ``re`` on a field's text (``output.final_answer`` unless ``field`` says otherwise).

    ``match: search`` (default) looks for the pattern anywhere; ``fullmatch`` needs the whole
    text to match. With ``must_match: false`` the pattern must not occur (search) or the text
    must not be a full match. A missing field is empty text, as in ``contains_text``.
    """

    reads_case = False

    def __init__(self, name: str, type_name: str, config: dict[str, Any], context: EvaluatorContext | None = None) -> None:
        super().__init__(name, type_name, config, context)
        flags = 0
        for flag in self.config.flags:
            flags |= _FLAGS[flag]
        self._regex = re.compile(self.config.pattern, flags)
        self._path = FieldPath(self.config.field)
        self.trace_fields = self._path.model_fields_read(Trace)  # per instance: the field it reads

    def evaluate_sync(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        cfg = self.config
        text = as_text(self._path.get(trace))
        found = self._regex.fullmatch(text) if cfg.match == "fullmatch" else self._regex.search(text)
        detail = {
            "field": cfg.field,
            "pattern": cfg.pattern,
            "flags": list(cfg.flags),
            "match_mode": cfg.match,
            "must_match": cfg.must_match,
            "matched": found is not None,
            "match": _shown(found.group(0)) if found else None,
            "span": list(found.span()) if found else None,
        }
        full = cfg.match == "fullmatch"
        what = "fully matches" if full else "contains a match for"
        negated = "does not fully match" if full else "has no match for"
        pattern = f"/{cfg.pattern}/"
        if cfg.must_match:
            if found:
                return Verdict(True, f"{cfg.field} {what} {pattern} at {found.span()}", score=1.0, detail=detail)
            empty = " (the field is absent or empty)" if text == "" else ""
            return Verdict(False, f"{cfg.field} {negated} {pattern}{empty}", score=0.0, detail=detail)
        if found:
            return Verdict(False, f"{cfg.field} {what} {pattern}, which it must not: "
                                  f"{_shown(found.group(0), 80)!r} at {found.span()}", score=0.0, detail=detail)
        return Verdict(True, f"{cfg.field} {negated} {pattern}, as required", score=1.0, detail=detail)


def _shown(text: str, limit: int = _SHOWN) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
