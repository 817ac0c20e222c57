"""Read a dataset (cases.yaml or .jsonl) as a stream of validated EvalCases.

Selection (``dataset.filter`` then ``dataset.sample`` then the CLI's ``--limit``) is
applied while streaming: the sample is drawn by reservoir over case positions, seeded by
the run id, and the chosen cases keep their dataset order. Every row of the dataset is
validated even when ``--limit`` stops the selection early, so a limited run (or a dry
run) rejects the same datasets a full run does.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from collections.abc import Callable, Collection, Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evalh_pipeline.config.errors import ConfigError, ConfigIssue
from evalh_pipeline.config.loader import check_case_evaluators
from evalh_pipeline.config.spec import EvalSpec
from evalh_pipeline.config.yaml_source import KeyPath, decode_utf8, format_key_path, load_yaml
from evalh_pipeline.models import EvalCase
from evalh_pipeline.models.versioning import SchemaVersionError, check_major
from evalh_pipeline.common.yaml_files import MAX_DEPTH


# Checks a row's own ``evaluators`` (entries, file name, line of a key path, key path of
# the entries) and returns them cleaned: config.loader.check_case_evaluators, bound to an eval.
CaseEvaluatorCheck = Callable[[Any, str, Callable[[KeyPath], "int | None"], KeyPath], list[dict[str, Any]]]


def iter_dataset(path: Path, dataset_type: str, *, embed_full_trace: bool = False,
                 case_evaluators: CaseEvaluatorCheck | None = None,
                 variant_names: Collection[str] | None = None) -> Iterator[EvalCase]:
    """Every case of the file, validated; raises ConfigError at the first bad row.

    ``fixture`` files are YAML datasets whose cases may carry the ``embedded_trace`` they
    recorded (eval-harness's online-eval fixture); with ``embed_full_trace`` every case must.
    A row's own ``evaluators`` are checked by ``case_evaluators`` (the eval's check: names,
    types and configs), else by their shape only. A row's ``variants`` must name variants of
    ``variant_names`` (the eval's) when it is given.
    """
    seen: set[str] = set()
    rows = _iter_jsonl(path) if dataset_type == "jsonl" else _iter_yaml(path)
    for line, key, raw, line_of in rows:
        if embed_full_trace and isinstance(raw, dict) and not isinstance(raw.get("embedded_trace"), dict):
            raise ConfigError.single(path.name, line, format_key_path((*key, "embedded_trace")),
                                     "missing or not a mapping (dataset.embed_full_trace is true: "
                                     "every case needs the trace it recorded)")
        if case_evaluators is not None and isinstance(raw, dict) and "evaluators" in raw:
            raw = {**raw, "evaluators": case_evaluators(raw["evaluators"], path.name, line_of, (*key, "evaluators"))}
        if variant_names is not None and isinstance(raw, dict) and isinstance(raw.get("variants"), list):
            _check_case_variants(raw["variants"], variant_names, path.name, line_of, (*key, "variants"))
        try:
            case = EvalCase.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = format_key_path((*key, *err["loc"]))
            raise ConfigError.single(path.name, line, where, err["msg"]) from None
        if case.id in seen:
            raise ConfigError.single(path.name, line, format_key_path((*key, "id")),
                                     f"duplicate case id {case.id!r}: ids must be unique")
        seen.add(case.id)
        yield case


def _check_case_variants(names: list[Any], allowed: Collection[str], file: str,
                         line_of: Callable[[KeyPath], "int | None"], at: KeyPath) -> None:
    """A row's ``variants``: each a variant of the eval (one-line ConfigError at the first that is not)."""
    for i, name in enumerate(names):
        if isinstance(name, str) and name not in allowed:
            line = line_of((*at, i)) or line_of(at) or 0
            raise ConfigError.single(file, line, format_key_path((*at, i)),
                                     f"unknown variant {name!r}: allowed are {', '.join(allowed)}")


def select_cases(spec: EvalSpec, run_id: str) -> Iterator[EvalCase]:
    """The cases of one run: filtered, sampled reproducibly for ``run_id``, then limited."""
    selected = _filtered_and_sampled(spec, run_id)
    if spec.case_limit is None:
        yield from selected
        return
    for position, case in enumerate(selected):
        if position < spec.case_limit:
            yield case
        # Past the limit: keep reading, so every row is still validated.


def parse_filter_args(args: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """``--filter key=value`` options as ``dataset.filter`` rules.

    A value matches a case field equal to the value as a string, or to the value read as
    a YAML scalar (``3`` matches ``3`` and ``"3"``, ``true`` matches ``true`` and
    ``"true"``; booleans are YAML 1.2's, as in eval.yaml: ``yes`` is a string). Repeating a key allows any of its values (OR); different keys must all
    match (AND). Raises ValueError for an option without ``=`` or with an empty key.
    """
    import yaml

    from evalh_pipeline.config.yaml_source import parse_yaml_value

    rules: dict[str, list[Any]] = {}
    for arg in args:
        key, sep, value = arg.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"--filter {arg!r}: expected key=value")
        allowed = rules.setdefault(key, [])
        candidates: list[Any] = [value]
        try:
            parsed = parse_yaml_value(value)
        except yaml.YAMLError:
            parsed = value
        if not isinstance(parsed, (dict, list)) and parsed is not None and parsed != value:
            candidates.append(parsed)
        for candidate in candidates:
            if not any(candidate == a and type(candidate) is type(a) for a in allowed):
                allowed.append(candidate)
    return rules


def with_selection(spec: EvalSpec, filters: dict[str, Any] | None = None, limit: int | None = None) -> EvalSpec:
    """``spec`` narrowed by CLI selection: ``filters`` (from :func:`parse_filter_args`)
    and a case ``limit``.

    A CLI filter on a key the eval already filters narrows it: a case must satisfy both
    (the allowed values are intersected). The snapshot config (``raw``) records the
    merged filter and the limit (``dataset.limit``), so the run directory says which
    cases were asked for.
    """
    if not filters and limit is None:
        return spec
    merged = dict(spec.config.dataset.filter)
    for key, allowed in (filters or {}).items():
        if key in merged:
            existing = merged[key] if isinstance(merged[key], list) else [merged[key]]
            merged[key] = [a for a in allowed if a in existing]
        else:
            merged[key] = allowed if len(allowed) != 1 else allowed[0]
    dataset = spec.config.dataset.model_copy(update={"filter": merged})
    config = spec.config.model_copy(update={"dataset": dataset})
    raw_dataset = {**spec.raw.get("dataset", {}), "filter": merged}
    if limit is not None:
        raw_dataset["limit"] = limit
    raw = {**spec.raw, "dataset": raw_dataset}
    return replace(spec, config=config, raw=raw, case_limit=limit)


def dataset_cases(spec: EvalSpec) -> Iterator[EvalCase]:
    """Every case of the eval's dataset file (unfiltered), validated."""
    dataset = spec.config.dataset
    embed = bool((dataset.model_extra or {}).get("embed_full_trace")) and dataset.type == "fixture"
    check = partial(check_case_evaluators, eval_evaluators={e.name for e in spec.config.evaluators},
                    registry=spec.evaluator_types)
    return iter_dataset(spec.dataset_path, dataset.type, embed_full_trace=embed, case_evaluators=check,
                        variant_names=spec.variant_names)


def _filtered_and_sampled(spec: EvalSpec, run_id: str) -> Iterator[EvalCase]:
    dataset = spec.config.dataset
    matching = (c for c in dataset_cases(spec) if _matches(c, dataset.filter))
    if dataset.sample is None:
        yield from matching
        return
    seed = (dataset.model_extra or {}).get("seed", run_id)
    chosen = sample_positions(sum(1 for _ in matching), dataset.sample, seed)
    filtered = (c for c in dataset_cases(spec) if _matches(c, dataset.filter))
    for position, case in enumerate(filtered):
        if chosen is None or position in chosen:
            yield case


def sample_positions(count: int, k: int, seed: Any) -> set[int] | None:
    """Positions (among ``count`` matching cases) that ``dataset.sample: k`` keeps; None: all.

    eval-harness's draw, ``random.Random(seed).sample(cases, k)`` with the run id as seed
    (``dataset.seed`` fixes it): ``Random.sample`` picks positions from the population's
    length alone, so drawing from ``range(count)`` selects the same cases while the dataset
    is streamed. The chosen cases keep their dataset order.
    """
    if k >= count:
        return None
    return set(random.Random(seed).sample(range(count), k))


def _matches(case: EvalCase, rules: dict[str, Any]) -> bool:
    """``key: value`` or ``key: [allowed, ...]``; keys are dotted paths into the case,
    and a bare key names ``metadata.<key>``."""
    if not rules:
        return True
    for key, allowed in rules.items():
        path = key.split(".") if "." in key or key in EvalCase.model_fields else ["metadata", key]
        node: Any = case.model_dump()
        for part in path:
            if not isinstance(node, dict) or part not in node:
                return False
            node = node[part]
        if isinstance(allowed, list) and not isinstance(node, list):
            if node not in allowed:
                return False
        elif node != allowed:
            return False
    return True


# (line of the row, key path of the row, the row, the line of a key path within the row)
_Row = tuple[int, KeyPath, Any, Callable[[KeyPath], "int | None"]]


def _iter_jsonl(path: Path) -> Iterator[_Row]:
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            line = decode_utf8(raw, path.name, number)
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError.single(path.name, number, "", f"invalid JSON: {exc.msg}") from None
            except RecursionError:
                value = _TOO_DEEP
            # Fewer brackets than the limit cannot nest deeper than it: most lines skip the walk.
            if value is _TOO_DEEP or (line.count("{") + line.count("[") > MAX_DEPTH and _too_deep(value)):
                raise ConfigError.single(path.name, number, "", f"nested deeper than {MAX_DEPTH} levels") from None
            yield number, (), value, lambda _key, number=number: number  # type: ignore[misc]


_TOO_DEEP = object()


def _too_deep(value: Any) -> bool:
    """Whether ``value`` nests deeper than the YAML limit (iterative: a deep value must not recurse)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > MAX_DEPTH:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _iter_yaml(path: Path) -> Iterator[_Row]:
    # YAML 1.1 booleans (yes/no/on/off), as eval-harness's yaml.safe_load reads datasets.
    doc = load_yaml(path, yaml11_booleans=True)
    data = doc.data
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
        raise ConfigError.single(path.name, doc.line_of(()), "cases", "a YAML dataset needs a 'cases:' list")
    try:
        check_major(data.get("schema_version", "1.0"), what=path.name)
    except SchemaVersionError as exc:
        raise ConfigError([ConfigIssue(path.name, doc.line_of(("schema_version",)), "schema_version", str(exc))]) from None
    for i, raw in enumerate(data["cases"]):
        yield doc.line_of(("cases", i)) or 0, ("cases", i), raw, doc.line_of
