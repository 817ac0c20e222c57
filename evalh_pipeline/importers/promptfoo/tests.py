"""promptfoo ``tests`` (inline or ``file://`` csv/json/jsonl/yaml) and ``defaultTest`` as cases.

Each test is a case whose ``input.vars`` are the test's vars (``defaultTest.vars`` under
them); a var whose value is a list makes one test per value, as promptfoo does. The test's
assertions (and ``defaultTest``'s that use its vars) become the case's own ``evaluators``;
``defaultTest``'s other assertions are the eval's.
"""

from __future__ import annotations

import itertools
import math
import re
import shutil
from dataclasses import dataclass, field, replace
from typing import Any

from evalh_pipeline.importers.promptfoo.assertions import (
    KNOWN_TYPES,
    Judge,
    Outputs,
    check_type,
    contains_values,
    map_assertion,
)
from evalh_pipeline.importers.promptfoo.source import Located, Source, read_rows
from evalh_pipeline.importers.promptfoo.templates import has_template, render
from evalh_pipeline.importers.report import BadSource

Place = tuple[str, str, int | None]
# The thresholds promptfoo gives a CSV `__expected` cell of these types (DEFAULT_SEMANTIC_SIMILARITY_THRESHOLD
# is 0.8, index.js:11385; the others 0.75).
_CSV_DEFAULT_THRESHOLD = {
    **dict.fromkeys(("answer-relevance", "classifier", "context-faithfulness", "context-recall", "context-relevance",
                     "cost", "latency", "levenshtein", "perplexity-score", "perplexity", "rouge-n", "starts-with"), 0.75),
    "similar": 0.8,
}
_TEST_KEYS = {"vars", "assert", "description", "threshold", "metadata", "options", "providers"}
_ASSERTION_PREFIXES = (("javascript:", "javascript"), ("fn:", "javascript"), ("eval:", "javascript"),
                       ("grade:", "llm-rubric"), ("llm-rubric:", "llm-rubric"), ("python:", "python"))


@dataclass
class Test:
    """One promptfoo test before it becomes a case."""

    place: Place
    vars: dict[str, Any]
    asserts: list[tuple[dict[str, Any], Place]] = field(default_factory=list)
    description: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    providers: list[str] | None = None  # the test's `providers` filter
    rubric_prompt: Any = None  # its `options.rubricPrompt`
    threshold: float | None = None  # its `threshold` (None: every assertion must pass)
    transform: Any = None  # its `options.transform`


@dataclass
class Tests:
    """The cases and the eval-level evaluators."""

    cases: list[dict[str, Any]]
    evaluators: list[dict[str, Any]]
    # Case id -> the imported providers (positions) its test's `providers` filter keeps, for
    # the cases that run on some of them only, and the test's place.
    providers_of: dict[str, tuple[list[int], Place]] = field(default_factory=dict)


def _raw_tests(source: Source) -> list[Located]:
    data = source.doc.data.get("tests")
    if data is None:
        return [Located({}, source.name, "tests", None)]
    entries = [data] if isinstance(data, str) else data
    if not isinstance(entries, list):
        raise BadSource(source.name, source.line(("tests",)), "tests", "must be a list or a file:// reference")
    out: list[Located] = []
    for index, entry in enumerate(entries):
        file, where, line = source.at(("tests", index) if isinstance(data, list) else ("tests",))
        if isinstance(entry, str) and entry.startswith("file://"):
            for path in source.resolve(entry, (file, where, line), many=True):
                out += read_rows(source, path)
        elif isinstance(entry, dict):
            out.append(Located(entry, file, where, line))
        else:
            source.note((file, where, line), "a test that is neither a mapping nor a file:// reference", "test left out")
    return out


def assertion_from_string(text: str) -> dict[str, Any]:
    """promptfoo's ``assertionFromString`` for a CSV ``__expected`` cell (src/csv.ts,
    dist/src/index.js:11466-11517): a ``type:value`` prefix, else ``equals``."""
    for prefix, kind in _ASSERTION_PREFIXES:
        if text.startswith(prefix):
            return {"type": kind, "value": text[len(prefix):].strip() if kind != "llm-rubric" else text[len(prefix):]}
    head, sep, rest = text.partition(":")
    name, _, threshold = head.partition("(")
    base = name.removeprefix("not-")
    if base in KNOWN_TYPES and (sep or not rest):
        out: dict[str, Any] = {"type": name}
        if threshold.endswith(")"):
            out["threshold"] = float(threshold[:-1])
        elif base in _CSV_DEFAULT_THRESHOLD:
            # index.js:11501-11507: these types get a threshold in a CSV cell even when none is written
            out["threshold"] = _CSV_DEFAULT_THRESHOLD[base]
        value: Any = rest if sep else None
        if base in ("contains-all", "contains-any", "icontains-all", "icontains-any"):
            value = contains_values(base, value) if value else value
        elif value is not None and base not in ("contains-json", "is-json"):
            value = value.strip()
        if value is not None:
            out["value"] = value
        return out
    return {"type": "equals", "value": text}


def _csv_config(test: Test, key: str, value: str) -> tuple[int, float]:
    """A ``__config:__expected<N>:threshold`` cell: (index of the assertion, threshold), as
    promptfoo's src/csv.ts reads it (dist/src/index.js:11564-11592: ``__expected`` and
    ``__expected1`` are the first assertion; only ``threshold`` is a key; the value a finite number)."""
    found = re.fullmatch(r"__config:__expected(\d*):threshold", key)
    index = (int(found.group(1) or 1) - 1) if found else -1
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if index < 0 or not math.isfinite(number):
        raise BadSource(test.place[0], test.place[2], test.place[1],
                        f"CSV column {key!r} with {value!r}: promptfoo takes __config:__expected<N>:threshold "
                        "with a number")
    return index, number


def _csv_test(source: Source, row: Located) -> Test:
    test = Test((row.file, row.where, row.line), {})
    metric, threshold = None, None
    configs: dict[int, float] = {}
    for key, value in row.value.items():
        key = (key or "").strip()
        value = value or ""
        if key.startswith("__expected"):
            if value.strip():
                test.asserts.append((assertion_from_string(value.strip()), test.place))
        elif key == "__description":
            test.description = value
        elif key == "__metric":
            metric = value
        elif key == "__threshold":
            threshold = value
        elif key.startswith("__metadata:") and value.strip():
            name = key.removeprefix("__metadata:")
            if name.endswith("[]"):
                # src/csv.ts (index.js:11557-11559): a list, split on commas not escaped as `\,`
                test.metadata[name[:-2]] = [v.strip().replace("\\,", ",") for v in re.split(r"(?<!\\),", value)]
            else:
                test.metadata[name] = value
        elif key.startswith("__config:"):
            index, number = _csv_config(test, key, value)
            configs[index] = number
        elif key.startswith("__"):
            source.note(test.place, f"CSV column {key!r} not mapped", "left out")
        else:
            test.vars[key] = value
    for index, (assertion, _) in enumerate(test.asserts):
        if metric:
            assertion["metric"] = metric
        if index in configs:
            # index.js:11596-11600: the threshold goes on the assertion and into the test's metadata
            assertion["threshold"] = test.metadata["threshold"] = configs[index]
    if threshold:
        # src/csv.ts: `__threshold` is the test's threshold (a number)
        test.threshold = _threshold(source, test.place, "__threshold", threshold)
    return test


def dereference(source: Source, assertion: Any, place: Place) -> Any:
    """An assertion written as ``$ref: '#/assertionTemplates/name'``: the value the JSON
    pointer names in the config (promptfoo dereferences the whole config with
    json-schema-ref-parser before reading it, dist/src/index.js:13187-13225); its other keys
    are kept over the template's. A pointer that names nothing is bad input, as promptfoo
    fails to load such a config."""
    if not (isinstance(assertion, dict) and isinstance(assertion.get("$ref"), str)):
        return assertion
    pointer = assertion["$ref"]
    target: Any = source.doc.data
    for part in pointer.removeprefix("#").strip("/").split("/") if pointer.startswith("#/") else [None]:
        key = part.replace("~1", "/").replace("~0", "~") if part is not None else None
        if isinstance(target, dict) and key in target:
            target = target[key]
        elif isinstance(target, list) and key is not None and key.isdigit() and int(key) < len(target):
            target = target[int(key)]
        else:
            raise BadSource(place[0], place[2], place[1], f"$ref {pointer!r} names nothing in {source.name} "
                                                           "(only '#/...' pointers into the config are read)")
    if not isinstance(target, dict):
        raise BadSource(place[0], place[2], place[1], f"$ref {pointer!r} is not an assertion (a mapping)")
    return {**target, **{k: v for k, v in assertion.items() if k != "$ref"}}


def _test(source: Source, located: Located) -> Test:
    data, place = located.value, (located.file, located.where, located.line)
    if located.file.endswith(".csv"):
        return _csv_test(source, located)
    for key in sorted(set(data) - _TEST_KEYS):
        source.note(place, f"test key {key!r} not mapped", "left out")
    options = data.get("options") or {}
    for key in sorted(set(options) - {"rubricPrompt", "transform"}):
        # transform / postprocess change what every assertion sees: the verdicts would differ.
        source.note(place, f"test option {key!r} not mapped", "left out",
                    "error" if key in ("transform", "postprocess", "provider") else "note")
    variables = data.get("vars") or {}
    if not isinstance(variables, dict):
        source.note(place, "vars that are not a mapping (a file of vars)", "test left out")
        variables = {}
    asserts = data.get("assert") or []
    where = located.where
    places = [(located.file, f"{where}.assert[{i}]", _line_in(source, located, ("assert", i))) for i in range(len(asserts))]
    listed = data.get("providers")
    return Test(place, dict(variables), [(dereference(source, a, p), p) for a, p in zip(asserts, places)],
                data.get("description"), dict(data.get("metadata") or {}),
                [str(r) for r in listed] if isinstance(listed, list) else None, options.get("rubricPrompt"),
                _threshold(source, place, "threshold", data.get("threshold")), options.get("transform"))


def _threshold(source: Source, place: Place, key: str, value: Any) -> float | None:
    """A test's (or set's) ``threshold`` as promptfoo reads it: a number (a CSV cell is
    parsed as one); anything else, as an empty YAML ``threshold:``, sets none
    (assertionsResult.ts ``testResult``: only a numeric threshold counts)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if math.isnan(number):
        source.note(place, f"{key} {value!r} is not a number", "not used: every assertion must pass, as in promptfoo")
        return None
    return number


def provider_ref_matches(ref: str, label: str, ident: str) -> bool:
    """promptfoo's ``doesProviderRefMatch`` (src/util/provider.ts, dist/src/util-BmRwZ8Aq.js:1325-1338):
    the label or id itself, a ``prefix*`` of either, or either starting with ``ref:``. (promptfoo
    also compares canonical ids, ``openai:chat:x`` as ``openai:x``; that is not done here.)"""
    if ref in (label, ident):
        return True
    if ref.endswith("*") and (label.startswith(ref[:-1]) or ident.startswith(ref[:-1])):
        return True
    return label.startswith(f"{ref}:") or ident.startswith(f"{ref}:")


def _kept_providers(source: Source, test: Test, outputs: Outputs) -> list[int] | None:
    """The imported providers (their positions) the test runs on: None for all of them (no
    ``providers`` filter, or one that keeps every provider). promptfoo runs a test only on the
    providers its filter allows (isProviderAllowed, src/util/provider.ts; util-BmRwZ8Aq.js:1342-1346):
    a filter that keeps none leaves the test out (noted), one that keeps some becomes the
    case's ``variants`` (importer.py names them)."""
    if test.providers is None:
        return None
    kept = [i for i, (label, ident) in enumerate(outputs.providers)
            if any(provider_ref_matches(ref, label, ident) for ref in test.providers)]
    if not kept:
        source.note(test.place, f"test providers {test.providers} match no imported provider",
                    "test left out: promptfoo runs it on no provider either", "note")
    return None if len(kept) == len(outputs.providers) else kept


def _line_in(source: Source, located: Located, tail: tuple[Any, ...]) -> int | None:
    """The line of ``tail`` under a test of the config (other files: the test's line)."""
    if located.file == source.name and located.where.startswith("tests"):
        index = located.where.removeprefix("tests").strip("[]")
        key: tuple[Any, ...] = ("tests", int(index)) if index.isdigit() else ("tests",)
        return source.line((*key, *tail))
    return located.line


def _var_values(source: Source, test: Test) -> list[dict[str, Any]]:
    """The test's vars, ``file://`` text files read, and one set per combination of list values."""
    resolved: dict[str, Any] = {}
    for name, value in test.vars.items():
        if isinstance(value, str) and value.startswith("file://"):
            paths = source.resolve(value, test.place, many=True)
            if any(p.suffix.lower() in (".py", ".js", ".ts", ".mjs", ".cjs") for p in paths):
                source.note(test.place, f"var {name!r} computed by {value}", "var left empty")
                value = ""
            else:
                # A glob names several files: one test per file, as promptfoo expands it.
                texts = [source.read_text(p) for p in paths]
                value = texts if any(c in value for c in "*?[") else texts[0]
        resolved[name] = value
    listed = [name for name, value in resolved.items() if isinstance(value, list)]
    combos = [resolved] if not listed else [{**resolved, **dict(zip(listed, combo))}
                                             for combo in itertools.product(*(resolved[name] for name in listed))]
    return [_render_vars(source, test, combo) for combo in combos]


def _render_vars(source: Source, test: Test, variables: dict[str, Any]) -> dict[str, Any]:
    """Vars whose text uses other vars (``sentence: 'tweet about {{topic}}'``) rendered with
    them, as promptfoo renders a var's value before the prompt (evalh renders once)."""
    out = dict(variables)
    for name, value in variables.items():
        if has_template(value):
            out[name], problems = render(value, {k: v for k, v in variables.items() if k != name})
            if problems:
                source.note(test.place, f"var {name!r}: {'; '.join(problems)} does not map", "kept as written")
    return out


def read_tests(source: Source, judge: Judge, outputs: Outputs | None = None) -> Tests:
    """Every test of the config as a case, and ``defaultTest``'s shared assertions."""
    default = source.doc.data.get("defaultTest") or {}
    default_place = source.at(("defaultTest",))
    if isinstance(default, str):
        path = source.resolve(default, default_place)[0]
        default = source.load_yaml(path).data or {}
    for key in sorted(set(default) - {"vars", "assert", "options", "metadata", "threshold"}):
        source.note(default_place, f"defaultTest key {key!r} not mapped", "left out")
    default_threshold = _threshold(source, default_place, "threshold", default.get("threshold"))
    default_options = default.get("options") or {}  # its other keys: importer.py's _judge reports them
    default_asserts = [(dereference(source, a, source.at(("defaultTest", "assert", i))), source.at(("defaultTest", "assert", i)))
                       for i, a in enumerate(default.get("assert") or [])]
    for assertion, place in default_asserts:
        check_type(source, assertion, place)
    tests = [_test(source, located) for located in _raw_tests(source)]
    # A test with a threshold is judged on all its assertions together, defaultTest's
    # included (promptfoo appends them to the test's): then every case carries its own copy
    # of defaultTest's assertions, as no eval-level evaluator may judge such a case alone.
    # So with a transform (the test's, else defaultTest's: promptfoo merges defaultTest's
    # options under the test's), which rewrites what all of them see.
    weighed = (default_threshold is not None or default_options.get("transform") is not None
               or any(t.threshold is not None or t.transform is not None for t in tests))
    shared = [(i, a, p) for i, (a, p) in enumerate(default_asserts) if not weighed and not _uses_vars(a)]
    per_case = [(i, a, p) for i, (a, p) in enumerate(default_asserts) if weighed or _uses_vars(a)]
    evaluators = []
    for index, assertion, place in shared:
        evaluators += _evaluators(source, f"default-{index + 1}", assertion, None, place, judge, outputs)
    cases: list[dict[str, Any]] = []
    providers_of: dict[str, tuple[list[int], Place]] = {}
    for test in tests:
        for assertion, place in test.asserts:
            check_type(source, assertion, place)
        kept = _kept_providers(source, test, outputs or Outputs())
        if kept == []:
            continue
        own_judge = judge if test.rubric_prompt is None else replace(judge, rubric_prompt=test.rubric_prompt)
        if test.rubric_prompt is not None and any(a.get("type") == "llm-rubric" for _, a, _ in shared):
            source.note(test.place, "test rubricPrompt over defaultTest's llm-rubric",
                        "defaultTest's llm-rubric is judged with defaultTest's grading prompt in this case")
        for variables in _var_values(source, Test(test.place, {**(default.get("vars") or {}), **test.vars})):
            own: list[dict[str, Any]] = []
            threshold = test.threshold if test.threshold is not None else default_threshold
            weighted = threshold is not None
            written = test.transform if test.transform is not None else default_options.get("transform")
            transform = _transform(source, test.place, "options.transform", written) if written is not None else None
            for index, assertion, place in per_case:
                own += _evaluators(source, f"default-{index + 1}", assertion, variables, place, own_judge, outputs,
                                   weighted)
            for index, (assertion, place) in enumerate(test.asserts):
                own += _evaluators(source, f"assert-{index + 1}", assertion, variables, place, own_judge, outputs,
                                   weighted)
            if (weighted or transform is not None) and own:
                own = [_weighed("assert-threshold" if weighted else "assert-transform", own, threshold, transform)]
            case: dict[str, Any] = {"id": f"test-{len(cases) + 1}", "input": {"vars": variables}}
            metadata = {**(default.get("metadata") or {}), **test.metadata}
            if test.description:
                metadata["description"] = test.description
            if metadata:
                case["metadata"] = metadata
            if own:
                case["evaluators"] = own
            if kept is not None:
                providers_of[case["id"]] = (kept, test.place)
            cases.append(case)
    return Tests(cases, evaluators, providers_of)


def _uses_vars(assertion: dict[str, Any]) -> bool:
    """Whether the assertion's value (or a nested one of an ``assert-set``) uses the test's vars."""
    listed = assertion.get("assert")
    nested = listed if isinstance(listed, list) else []
    return has_template(assertion.get("value")) or any(isinstance(a, dict) and _uses_vars(a) for a in nested)


def _weighed(name: str, members: list[dict[str, Any]], threshold: float | None,
             transform: dict[str, Any] | None = None) -> dict[str, Any]:
    """An ``evaluator_set`` of ``members`` (each with its ``weight``) that passes on promptfoo's
    rule (src/assertions/assertionsResult.ts, AssertionsResult.addResult / testResult): the
    weighted mean score sum(score * weight) / sum(weight) >= ``threshold``, or, without one,
    no member of weight above 0 failed (src/assertions/index.ts, runAssertionInternal: a
    weight-0 assertion always passes); ``transform``: the members judge the output as it
    rewrites it."""
    config: dict[str, Any] = {"evaluators": members}
    if threshold is not None:
        config["threshold"] = threshold
    if transform is not None:
        config["transform"] = transform
    return {"name": name, "type": "evaluator_set", "config": config}


def _evaluators(source: Source, name: str, assertion: dict[str, Any], variables: dict[str, Any] | None,
                place: Place, judge: Judge, outputs: Outputs | None, weighted: bool = False) -> list[dict[str, Any]]:
    """The evaluator entries of one assertion, named ``<name>-<metric or type>`` (``default-<n>``
    for defaultTest's, ``assert-<n>`` for the test's own, so they never clash); an ``assert-set``
    gives one per nested assertion, named ``<name>-set-<m>-...``, or one ``evaluator_set`` named
    ``<name>-set`` when its verdict is a weighted score. ``weighted``: the entries are members
    of a set scored by weight (a test with a threshold), and carry their ``weight``."""
    if assertion.get("type") == "assert-set":
        return _assert_set(source, name, assertion, variables, place, judge, outputs, weighted)
    mapped = map_assertion(source, assertion, variables, place, judge, outputs)
    if mapped is None:
        return []
    kind, config = mapped
    label = str(assertion.get("metric") or assertion["type"])
    entry: dict[str, Any] = {"name": re.sub(r"[\s|,\[\]/\\:]+", "-", f"{name}-{label}"), "type": kind, "config": config}
    weight = _weight(source, assertion, place)
    if assertion.get("transform") is not None:
        # runAssertionInternal (src/assertions/index.ts) rewrites the output for this assertion only
        transform = _transform(source, place, "assertion transform", assertion["transform"])
        if transform is None:
            return []
        entry = _weighed(entry["name"], [entry], None, transform)
    if weighted:
        entry["weight"] = weight
    elif weight == 0:
        # runAssertionInternal (src/assertions/index.ts) passes a weight-0 assertion whatever
        # it found: a set of it alone, of weight 0, records its verdict and always passes.
        return [_weighed(entry["name"], [{**entry, "weight": 0.0}], None)]
    elif weight != 1:
        source.note(place, f"assertion weight {assertion['weight']}",
                    "not used: it only weighs promptfoo's test score; evalh needs every assertion to pass", "note")
    return [entry]


def _transform(source: Source, place: Place, key: str, value: Any) -> dict[str, Any] | None:
    """A promptfoo ``transform`` as an evaluator_set's (evaluators/output_transform.py): inline
    JavaScript, or ``file://x.js[:fn]`` / ``file://x.py[:fn]`` copied in as its source (as
    src/util/transform.ts reads it); None, reported, when it cannot run here."""
    if not isinstance(value, str) or not value.strip():
        source.note(place, f"{key} that is not code", "not used")
        return None
    if not value.startswith("file://"):
        if shutil.which("node") is None:
            source.note(place, f"{key} is JavaScript and needs Node.js, which is not installed here",
                        "not used: install Node and import again to judge as promptfoo does")
            return None
        return {"language": "javascript", "code": value}
    target, function = value.removeprefix("file://"), ""
    head, _, tail = target.rpartition(":")
    if head.lower().endswith((".js", ".cjs", ".py")):
        target, function = head, tail
    path = source.resolve(f"file://{target}", place)[0]
    language = "python" if path.suffix.lower() == ".py" else "javascript"
    if path.suffix.lower() not in (".js", ".cjs", ".py"):
        source.note(place, f"{key} in {source.relative(path)}", "not used: only .js, .cjs and .py files are imported")
        return None
    if language == "javascript" and shutil.which("node") is None:
        source.note(place, f"{key} is JavaScript and needs Node.js, which is not installed here",
                    "not used: install Node and import again to judge as promptfoo does")
        return None
    config = {"language": language, "source": source.read_text(path), "name": path.name}
    if function:
        config["function"] = function
    return config


def _weight(source: Source, assertion: dict[str, Any], place: Place) -> float:
    """An assertion's (or set's) ``weight``: promptfoo's default 1 (AssertionsResult.addResult)."""
    weight = assertion.get("weight")
    if weight is None:
        return 1.0
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight < 0:
        source.note(place, f"weight {weight!r} is not a number >= 0", "weight 1 used")
        return 1.0
    return float(weight)


def _assert_set(source: Source, name: str, group: dict[str, Any], variables: dict[str, Any] | None,
                place: Place, judge: Judge, outputs: Outputs | None, weighted: bool = False) -> list[dict[str, Any]]:
    """An ``assert-set``: its nested assertions become the case's own evaluators. promptfoo scores
    the set with its own AssertionsResult (src/assertions/index.ts, runAssertions;
    src/assertions/assertionsResult.ts): without a ``threshold`` the set passes when every nested
    assertion passes and a failed set fails the test, so the verdict is the same as judging each
    nested assertion on its own; the set's ``weight`` and ``metric`` only shape promptfoo's
    scores. A set with a ``threshold`` (passed on the weighted mean score of its assertions),
    or one inside a test with a threshold (whose score counts by the set's weight), becomes an
    ``evaluator_set`` of its assertions."""
    nested = group.get("assert")
    file, where, line = place
    if not isinstance(nested, list) or not nested:
        raise BadSource(file, line, where, "an assert-set needs 'assert', a list of assertions")
    for key in sorted(set(group) - {"type", "assert", "threshold", "weight", "metric", "config"}):
        source.note(place, f"assert-set key {key!r} not mapped", "left out")
    threshold = _threshold(source, place, "assert-set threshold", group.get("threshold"))
    as_set = weighted or threshold is not None
    out: list[dict[str, Any]] = []
    for index, assertion in enumerate(nested):
        inner = (file, f"{where}.assert[{index}]", line)
        assertion = dereference(source, assertion, inner)
        if check_type(source, assertion, inner) == "assert-set":
            raise BadSource(file, line, inner[1], "an assert-set inside an assert-set (promptfoo: assert-set must not have child assert-sets)")
        out += _evaluators(source, f"{name}-set-{index + 1}", assertion, variables, inner, judge, outputs, as_set)
    if not as_set or not out:
        return out
    entry = _weighed(f"{name}-set", out, threshold)
    if weighted:
        entry["weight"] = _weight(source, group, place)
    return [entry]
