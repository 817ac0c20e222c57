"""Import an Inspect AI log (``.json``, or ``.eval``: a zip of ``header.json`` and
``samples/*.json``) as an eval that replays it offline.

Read by the log format's documented structure (inspect_ai ``src/inspect_ai/log/_log.py``:
``EvalLog`` with ``eval``, ``samples``; ``EvalSample`` with ``id``, ``epoch``, ``input``,
``target``, ``output``, ``scores``, ``metadata``); inspect_ai itself is not needed.

Each sample becomes a case carrying the trace Inspect recorded (``embedded_trace``: the
model's completion and messages) for the ``replay`` system, so ``evalh run`` reproduces the
log without calling any model. Each scorer becomes an evaluator (``exact_match`` on the
trace's ``extra.inspect_scores.<scorer>.passed``, the name with ``_`` for
other characters than letters, digits and ``_``). The pass rule follows Inspect's own
``value_to_float``: ``C``/``correct``/``yes``/``true`` are 1, ``P`` (partial) 0.5,
``I``/``N`` and other text 0, booleans and numbers as they are; a score passes when that
value is at least the pass threshold (default 1.0: only a full score passes).

With a ``live_model``, the import also writes ``live.yaml``: the same cases sent afresh to that
model (an ``http`` system with the ``openai_chat`` preset at ``OPENAI_BASE_URL``, named as the
replay's variant so ``evalh compare`` pairs the replayed log with the fresh run), each case
judged by the log's scorers mapped to evaluators of the same names
(:mod:`evalh_pipeline.importers.inspect_scorers`); a scorer that does not map is reported.
"""

from __future__ import annotations

import json
import math
import re
import zipfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from evalh_pipeline.config.schema import eval_key
from evalh_pipeline.importers import inspect_epochs, inspect_scorers
from evalh_pipeline.importers.openai_evals.importer import ENDPOINT
from evalh_pipeline.importers.report import REPORT_NAME, BadSource, ImportReport
from evalh_pipeline.importers.writing import ImportedFiles

DEFAULT_PASS_THRESHOLD = 1.0
LIVE_EVAL, LIVE_CASES = "live.yaml", "live-cases.yaml"
# GenerateConfig fields (inspect_ai model/_generate_config.py) sent as the same request fields.
_GENERATE = ("temperature", "top_p", "max_tokens", "seed", "stop_seqs", "frequency_penalty", "presence_penalty")
_ZIP_ZSTANDARD = 93  # the zip compression method of zstd (APPNOTE 4.4.5)
_TRUE_TEXT = {"c", "correct", "yes", "true"}
_PARTIAL_TEXT = {"p", "partial"}


@dataclass(frozen=True)
class _Sample:
    where: str  # file (and key) the sample came from, for the report
    raw: dict[str, Any]


def import_inspect_log(path: Path, *, variant: str = "inspect", pass_threshold: float = DEFAULT_PASS_THRESHOLD,
                       live_model: str | None = None) -> ImportedFiles:
    """Read the Inspect log at ``path`` and return the eval that replays it (and, with ``live_model``,
    ``live.yaml`` that runs its samples afresh against that model); raise :class:`BadSource`
    when it is not a readable Inspect log or holds no sample."""
    header, samples = _read_log(path)
    report = ImportReport(f"Inspect AI log {path}")
    spec = header.get("eval")
    if not isinstance(spec, dict) or not isinstance(spec.get("task"), str):
        raise BadSource(path.name, None, "eval.task", "missing: not an Inspect log (an EvalLog has eval.task)")
    if not samples:
        raise BadSource(path.name, None, "samples", "the log holds no sample (nothing to import)")
    model = spec.get("model") if isinstance(spec.get("model"), str) else None
    if header.get("status") not in (None, "success"):
        report.add(path.name, None, "status", f"the log's status is {header.get('status')!r}, not 'success'",
                   "its samples are imported as they are", "note")
    cases: list[dict[str, Any]] = []
    scorers: dict[str, str] = {}  # key in extra.inspect_scores -> the scorer's name
    for sample in samples:
        case = _case(sample, model, report)
        if case is None:
            continue
        for key, score in case["embedded_trace"]["extra"]["inspect_scores"].items():
            scorers.setdefault(key, score["scorer"])
        cases.append(case)
    if not cases:
        raise BadSource(path.name, None, "samples", "no sample could be imported (see the reasons above)")
    if any(case["metadata"]["epoch"] != 1 for case in cases):
        cases, scorers = _reduce_epochs(cases, scorers, spec, path.name, report)
    for case in cases:
        # A pass flag per scorer; a case the scorer did not score fails it (reported).
        scores = case["embedded_trace"]["extra"]["inspect_scores"]
        for scorer, scorer_name in scorers.items():
            if scorer not in scores:
                report.add(case["metadata"]["inspect_source"], None, f"scores.{scorer_name}",
                           "the sample has no score from this scorer", "it fails that evaluator")
                continue
            passed = _passed(scores[scorer].get("value"), pass_threshold)
            if passed is None:
                report.add(case["metadata"]["inspect_source"], None, f"scores.{scorer_name}.value",
                           f"{_short(scores[scorer].get('value'))} is not a single value (C/I/P/N, a number or a "
                           "boolean)", "the sample fails that evaluator")
                passed = False
            scores[scorer]["passed"] = passed
    for key, scorer_name in scorers.items():
        allowed = re.sub(r"[|,\[\]/\\\x00-\x1f]", "_", scorer_name).strip()
        if allowed != scorer_name:
            # Evaluator names allow no | , [ ] / \ (they appear in keys and filters).
            report.add(path.name, None, f"scores.{scorer_name}", "evaluator names allow no | , [ ] / \\",
                       f"evaluator named {allowed!r}", "note")
            scorers[key] = allowed
    name = eval_key(spec["task"].split("/")[-1])
    eval_config = {
        "schema_version": "1.0",
        "eval": {"name": name, "description": f"Imported from the Inspect AI log {path.name} (task "
                                              f"{spec['task']}, model {model}): replays its outputs and scores.",
                 "tags": ["inspect"]},
        "metadata": {"imported_from": "Inspect AI log", "log": path.name, "task": spec["task"],
                     "task_id": spec.get("task_id"), "model": model, "created": spec.get("created"),
                     "pass_threshold": pass_threshold},
        "dataset": {"type": "fixture", "path": "cases.yaml", "embed_full_trace": True},
        "systems": [{"name": variant, "adapter": "replay", "metadata": {"source": "inspect", "model": model}}],
        "evaluators": [{"name": scorer_name, "type": "exact_match",
                        "config": {"field": f"extra.inspect_scores.{key}.passed", "expected": True}}
                       for key, scorer_name in scorers.items()],
    }
    sent = {case["id"]: case.pop("_sent") for case in cases}
    dataset = {"schema_version": "1.0", "dataset": {"name": name}, "cases": cases}
    files: dict[str, str | bytes] = {
        "eval.yaml": yaml.safe_dump(eval_config, sort_keys=False, allow_unicode=True),
        "cases.yaml": yaml.safe_dump(json.loads(json.dumps(dataset)), sort_keys=False, allow_unicode=True),
    }
    if live_model is not None:
        files.update(_live(header, path.name, cases, sent, scorers, eval_config, live_model, report))
    files[REPORT_NAME] = report.markdown(name, [f"- {len(cases)} case(s)"])
    return ImportedFiles(name, files, len(cases), report)


def _live(header: dict[str, Any], log: str, cases: list[dict[str, Any]], sent: dict[str, list[dict[str, Any]]],
          scorers: dict[str, str], replay: dict[str, Any], model: str, report: ImportReport) -> dict[str, str | bytes]:
    """``live.yaml`` and its cases: each sample's conversation up to the model's first answer,
    sent to ``model``, judged by the log's scorers as evaluators of the replay's names."""
    options = _scorer_options(header)
    plan = _object(header.get("plan"))
    steps = [s.get("solver") for s in plan.get("steps") or [] if isinstance(s, dict)]
    if (steps and steps[-1] != "generate") or steps.count("generate") > 1:
        report.add(log, None, "plan.steps", f"solvers {steps} are not one final generate()",
                   f"{LIVE_EVAL} sends each sample's conversation up to the log's first model answer, once")
    config = _object(plan.get("config"))
    request = {("stop" if key == "stop_seqs" else key): config[key] for key in _GENERATE if config.get(key) is not None}
    for key in sorted(set(config) - set(_GENERATE)):
        if config[key] is not None:
            report.add(log, None, f"plan.config.{key}", "a generate option evalh does not send",
                       f"{LIVE_EVAL} leaves it out")
    mapped: dict[str, str] = {}  # score key -> evaluator name, for the scorers that map
    for key, name in scorers.items():
        scorer = str(next((c["embedded_trace"]["extra"]["inspect_scores"][key]["scorer"] for c in cases
                           if key in c["embedded_trace"]["extra"]["inspect_scores"]), name))
        probe = inspect_scorers.scorer_evaluator(scorer.split("/")[-1], options.get(scorer, {}), [])
        if isinstance(probe, str):
            report.add(log, None, f"scorers.{scorer}", probe, f"not judged in {LIVE_EVAL} (the replay keeps "
                       "the log's verdicts)")
        else:
            mapped[key] = scorer
    if mapped and any(c["metadata"].get("epochs") for c in cases):
        report.add(log, None, "samples", "the log's scores are reduced over its epochs",
                   f"{LIVE_EVAL} asks once per case and judges that one answer", "note")
    live_cases = []
    for case in cases:
        target = case["expected"]["facts"]["target"]
        targets = [str(t) for t in target] if isinstance(target, list) else [] if target is None else [str(target)]
        evaluators = []
        for key, scorer in mapped.items():
            found = inspect_scorers.scorer_evaluator(scorer.split("/")[-1], options.get(scorer, {}), targets)
            assert not isinstance(found, str)  # the probe above mapped this scorer
            evaluators.append({"name": scorers[key], **found})
        live_cases.append({"id": case["id"], "input": {"messages": sent[case["id"]]},
                           "metadata": case["metadata"],
                           "expected": case["expected"], "evaluators": evaluators})
    name = replay["eval"]["name"]
    (system,) = replay["systems"]
    live = {**replay,
            "eval": {**replay["eval"], "description": f"The samples of the Inspect AI log {log}, run afresh "
                                                      f"against {model}; compare with a run of eval.yaml."},
            "metadata": {**replay["metadata"], "live_model": model},
            "dataset": {"type": "yaml", "path": LIVE_CASES},
            "systems": [{"name": system["name"], "adapter": "http", "provider": "openai_chat", "model": model,
                         "endpoint": ENDPOINT, "headers": {"Authorization": "Bearer ${OPENAI_API_KEY}"}, **request}],
            "evaluators": []}
    dataset = {"schema_version": "1.0", "dataset": {"name": name}, "cases": live_cases}
    return {LIVE_EVAL: yaml.safe_dump(live, sort_keys=False, allow_unicode=True),
            LIVE_CASES: yaml.safe_dump(json.loads(json.dumps(dataset)), sort_keys=False, allow_unicode=True)}


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _scorer_options(header: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each scorer's arguments as the log records them (``eval.scorers[].options``), by name."""
    spec = _object(header.get("eval"))
    found: dict[str, dict[str, Any]] = {}
    for scorer in spec.get("scorers") or []:
        if isinstance(scorer, dict) and isinstance(scorer.get("name"), str):
            options = scorer.get("options")
            found[scorer["name"]] = options if isinstance(options, dict) else {}
    return found


def _sent(recorded: Any, given: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation the model answered first: the sample's recorded messages before the
    first assistant turn (a solver may have added a system message), else its input."""
    before: list[dict[str, Any]] = []
    for message in recorded if isinstance(recorded, list) else []:
        if not isinstance(message, dict) or message.get("role") == "assistant":
            break
        before.append(message)
    return _messages(before) or given


def _read_log(path: Path) -> tuple[dict[str, Any], list[_Sample]]:
    """The log's header (EvalLog without samples) and its samples, from either format."""
    if not path.is_file():
        raise BadSource(str(path), None, "", "no such file")
    if path.suffix == ".eval" or zipfile.is_zipfile(path):
        return _read_eval_zip(path)
    try:
        log = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadSource(path.name, getattr(exc, "lineno", None), "",
                        f"not a readable Inspect log (JSON expected): {exc}") from None
    if not isinstance(log, dict):
        raise BadSource(path.name, 1, "", "not an Inspect log (an EvalLog is a JSON object)")
    raw = log.get("samples") or []
    if not isinstance(raw, list):
        raise BadSource(path.name, None, "samples", "must be a list of samples")
    return log, [_Sample(f"{path.name} samples[{i}]", s) for i, s in enumerate(raw)]


def _read_eval_zip(path: Path) -> tuple[dict[str, Any], list[_Sample]]:
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            if "header.json" not in names:
                # A log still being written has only _journal/; the header is written at the end.
                raise BadSource(path.name, None, "header.json", "missing: not a finished Inspect .eval log")
            header = _json_member(archive, path, "header.json")
            samples = [_Sample(f"{path.name}!{name}", _json_member(archive, path, name))
                       for name in sorted(names, key=_sample_order) if re.fullmatch(r"samples/[^/]+\.json", name)]
    except (zipfile.BadZipFile, OSError, NotImplementedError) as exc:
        # NotImplementedError: a compression method neither zipfile nor zstandard reads.
        raise BadSource(path.name, None, "", f"not a readable Inspect .eval log (a zip archive): {exc}") from None
    return header, samples


def _sample_order(name: str) -> tuple[int, str]:
    # samples/<id>_epoch_<n>.json: epochs in numeric order, ids as written.
    found = re.fullmatch(r"samples/(.+)_epoch_(\d+)\.json", name)
    return (int(found.group(2)), found.group(1)) if found else (0, name)


def _member_bytes(archive: zipfile.ZipFile, name: str) -> bytes:
    """A member's content; zstd members (Inspect's default, zip method 93) are decompressed here
    as zipfile reads them only from Python 3.14."""
    info = archive.getinfo(name)
    if info.compress_type != _ZIP_ZSTANDARD:
        return archive.read(name)
    import zstandard  # imported here: only .eval logs need it

    handle = archive.fp
    if handle is None:
        raise zipfile.BadZipFile("the archive is closed")
    handle.seek(info.header_offset)
    local = handle.read(30)  # the local file header: its name and extra lengths end it
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"{name}: bad local file header")
    handle.seek(int.from_bytes(local[26:28], "little") + int.from_bytes(local[28:30], "little"), 1)
    data = handle.read(info.compress_size)
    try:
        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    except zstandard.ZstdError as exc:
        raise zipfile.BadZipFile(f"{name}: {exc}") from None


def _reduce_epochs(cases: list[dict[str, Any]], scorers: dict[str, str], spec: dict[str, Any], log: str,
                   report: ImportReport) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """One case per sample whose scores are its epochs' scores reduced as Inspect reduces them
    (the task's ``epochs_reducer``, ``mean`` by default; one evaluator per scorer and reducer
    when there are several), replaying the first epoch's answer."""
    config = spec.get("config")
    given = (config.get("epochs_reducer") if isinstance(config, dict) else None) or ["mean"]
    named = [given] if isinstance(given, str) else [str(r) for r in given]
    reducers = [r for r in named if inspect_epochs.known(r)]
    for unknown in [r for r in named if not inspect_epochs.known(r)]:
        report.add(log, None, "eval.config.epochs_reducer", f"epoch reducer {unknown!r} is not one evalh applies "
                   f"({', '.join(inspect_epochs.REDUCERS)})", "its reduced scores are not imported")
    if not reducers:
        report.add(log, None, "eval.config.epochs_reducer", "no epoch reducer applies",
                   "each sample's epochs are imported as cases of their own")
        return cases, scorers
    groups: dict[str, list[dict[str, Any]]] = {}
    for case in cases:
        groups.setdefault(str(case["metadata"]["inspect_id"]), []).append(case)
    report.add(log, None, "samples", f"{max(len(g) for g in groups.values())} epoch(s) per sample, reduced with "
               f"{', '.join(reducers)} as Inspect reduces them", "each case replays its sample's first epoch's "
               "answer; its scores are the reduced ones", "note")
    reduced_scorers = {(f"{key}_{r}" if len(reducers) > 1 else key): (f"{name}_{r}" if len(reducers) > 1 else name)
                       for key, name in scorers.items() for r in reducers}
    out = []
    for sample_id, epochs in groups.items():
        epochs.sort(key=lambda c: c["metadata"]["epoch"])
        case = epochs[0]
        trace = case["embedded_trace"]
        per_epoch = [c["embedded_trace"]["extra"]["inspect_scores"] for c in epochs]
        scores: dict[str, Any] = {}
        for key, name in scorers.items():
            values = [s[key].get("value") for s in per_epoch if key in s]
            if not values:
                continue
            for reducer in reducers:
                value = inspect_epochs.reduce_values(reducer, values)
                scores[f"{key}_{reducer}" if len(reducers) > 1 else key] = {
                    "scorer": name, "value": None if isinstance(value, float) and math.isnan(value) else value,
                    "reducer": reducer, "epochs": values}
        case["id"] = trace["case_id"] = sample_id
        trace["extra"]["inspect_scores"] = scores
        case["metadata"].update(epoch=1, epochs=[c["metadata"]["epoch"] for c in epochs])
        for other in epochs[1:]:
            other.pop("_sent", None)
        out.append(case)
    return out, reduced_scorers


def _json_member(archive: zipfile.ZipFile, path: Path, name: str) -> dict[str, Any]:
    try:
        value = json.loads(_member_bytes(archive, name).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadSource(f"{path.name}!{name}", getattr(exc, "lineno", None), "", f"not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise BadSource(f"{path.name}!{name}", 1, "", "must be a JSON object")
    return value


def _case(sample: _Sample, model: str | None, report: ImportReport) -> dict[str, Any] | None:
    raw = sample.raw
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), (str, int)):
        report.add(sample.where, None, "id", "missing (a sample's id is a string or an integer)", "sample skipped")
        return None
    epoch = raw.get("epoch", 1)
    case_id = str(raw["id"]) if epoch == 1 else f"{raw['id']}-epoch-{epoch}"
    messages = _messages(raw.get("input"))
    if messages is None:
        report.add(sample.where, None, "input", "neither text nor a list of chat messages", "sample skipped")
        return None
    target = raw.get("target")
    recorded = raw.get("output")
    output: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
    answer, thinking = _completion(output)
    if raw.get("error") is not None:
        report.add(sample.where, None, "error", "the sample errored in Inspect",
                   "its recorded output and scores are replayed as they are", "note")
    scores: dict[str, Any] = {}
    for scorer, score in (raw.get("scores") or {}).items():
        if not isinstance(score, dict) or "value" not in score:
            report.add(sample.where, None, f"scores.{scorer}", "not a Score (value, answer, explanation)",
                       "score skipped")
            continue
        # Keyed by the name with other characters than letters, digits and _ as _ (a package
        # scorer is `pkg/name`), so the evaluator's dotted field path can address it.
        scores[re.sub(r"[^A-Za-z0-9_]", "_", str(scorer))] = {
            "scorer": str(scorer), **{key: score.get(key) for key in ("value", "answer", "explanation")}}
    trace_messages = [*messages] + _messages_out(raw.get("messages"), len(messages))
    trace: dict[str, Any] = {
        "schema_version": "1.0", "run_id": "inspect", "case_id": case_id, "variant_name": "inspect",
        **_timing(raw),
        "input": {"messages": messages},
        "output": {"final_answer": answer, **({"thinking": thinking} if thinking else {})},
        "messages": trace_messages,
        "metrics": _usage(output.get("usage")),
        "extra": {"source_platform": "inspect", "model": output.get("model") or model, "inspect_scores": scores},
    }
    metadata = dict(raw.get("metadata") or {}) if isinstance(raw.get("metadata"), dict) else {}
    metadata.update({"inspect_source": sample.where, "inspect_id": raw["id"], "epoch": epoch})
    if raw.get("choices"):
        metadata["choices"] = raw["choices"]
    # _sent: what the model was sent (for live.yaml), taken out before cases.yaml is written.
    return {"id": case_id, "input": {"messages": messages}, "metadata": metadata,
            "expected": {"facts": {"target": target}}, "embedded_trace": trace,
            "_sent": _sent(raw.get("messages"), messages)}


def _text(content: Any) -> str | None:
    """A message's content as text: a string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [part.get("text") for part in content if isinstance(part, dict) and part.get("type") == "text"]
        return "".join(p for p in parts if isinstance(p, str))
    return None


def _messages(value: Any) -> list[dict[str, Any]] | None:
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    if isinstance(value, list) and all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in value):
        found = [{"role": m["role"], "content": _text(m.get("content"))} for m in value]
        return found if all(m["content"] is not None for m in found) else None
    return None


def _messages_out(value: Any, already: int) -> list[dict[str, Any]]:
    """The conversation after the input (the model's and tools' turns), as trace messages."""
    if not isinstance(value, list):
        return []
    turns = [m for m in value[already:] if isinstance(m, dict) and isinstance(m.get("role"), str)]
    return [{"role": m["role"], "content": _text(m.get("content"))} for m in turns]


def _completion(output: dict[str, Any]) -> tuple[str | None, str | None]:
    """The model's answer (ModelOutput.completion, else the first choice's text) and reasoning."""
    choices = output.get("choices") if isinstance(output.get("choices"), list) else []
    message = choices[0].get("message") if choices and isinstance(choices[0], dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    thinking = None
    if isinstance(content, list):
        reasoning = [p.get("reasoning") for p in content if isinstance(p, dict) and p.get("type") == "reasoning"]
        thinking = "".join(r for r in reasoning if isinstance(r, str)) or None
    completion = output.get("completion")
    return (completion if isinstance(completion, str) else _text(content)), thinking


def _usage(usage: Any) -> dict[str, Any]:
    if not isinstance(usage, dict):
        return {}
    figures = {"token_input": usage.get("input_tokens"), "token_output": usage.get("output_tokens"),
               "token_thinking": usage.get("reasoning_tokens")}
    return {key: value for key, value in figures.items() if isinstance(value, int) and value >= 0}


def _timing(raw: dict[str, Any]) -> dict[str, Any]:
    """started_at/finished_at/latency_ms from the sample's own times (Inspect >= 0.3.80 records
    ``started_at`` and ``total_time``), else the epoch (the replay keeps what is given)."""
    start = raw.get("started_at") if isinstance(raw.get("started_at"), str) else None
    total = raw.get("total_time") if isinstance(raw.get("total_time"), (int, float)) else None
    if start is None:
        start = datetime.fromtimestamp(0, timezone.utc).isoformat()
    began = datetime.fromisoformat(start)
    latency = int(round((total or 0) * 1000))
    finished = began.timestamp() + latency / 1000
    return {"started_at": start, "finished_at": datetime.fromtimestamp(finished, began.tzinfo or timezone.utc)
            .isoformat(), "latency_ms": latency}


def _passed(value: Any, threshold: float) -> bool | None:
    """The pass rule on a Score.value (Inspect's value_to_float); None: not a single value."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value) >= threshold
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUE_TEXT:
            return 1.0 >= threshold
        if text in _PARTIAL_TEXT:
            return 0.5 >= threshold
        try:
            return float(text) >= threshold
        except ValueError:
            return False  # I, N and other text score 0 in value_to_float
    return None


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."
