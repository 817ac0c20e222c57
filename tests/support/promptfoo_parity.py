"""Verdict-parity fixtures for ``evalh import promptfoo``: one promptfoo test per row, whose
answer (the echo model's reply) and assertion give the verdict promptfoo's own source decides.

Citations are to promptfoo 0.121.20 as published on npm: ``src/assertions/<file>.ts`` and the
line of its bundle ``dist/src/index.js`` where the rule is.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalh_pipeline.importers.promptfoo import import_promptfoo
from evalh_pipeline.importers.writing import write_tree
from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.stages import prepare_cases
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.run_dir import new_run_id
from tests.support.openai_chat_server import PREFIX, grader_says

# (assertion, reply, promptfoo's verdict, where promptfoo decides it)
ROWS: list[tuple[dict[str, Any], str, bool, str]] = [
    ({"type": "equals", "value": "Paris"}, "Paris", True, "equals.ts, index.js:1618: String(value) === output"),
    ({"type": "equals", "value": "Paris"}, "paris", False, "equals.ts, index.js:1618: case matters"),
    ({"type": "not-equals", "value": "Paris"}, "Lyon", True, "equals.ts, index.js:1618: !== inverse"),
    ({"type": "equals", "value": {"a": 1}}, '{"a": 1}', True, "equals.ts, index.js:1613: deep equal of parsed output"),
    ({"type": "not-equals", "value": {"a": 1}}, "not json", True, "equals.ts, index.js:1615: JSON.parse throws -> inverse"),
    ({"type": "equals", "value": 42}, "42", True, "equals.ts, index.js:1618: String(42)"),
    ({"type": "contains", "value": "Par"}, "Paris", True, "contains.ts, index.js:1446"),
    ({"type": "contains", "value": "par"}, "Paris", False, "contains.ts, index.js:1446: case-sensitive"),
    ({"type": "icontains", "value": "PAR"}, "Paris", True, "contains.ts, index.js:1457"),
    ({"type": "not-contains", "value": "Lyon"}, "Paris", True, "contains.ts, index.js:1446: !== inverse"),
    ({"type": "not-icontains", "value": "PARIS"}, "paris", False, "contains.ts, index.js:1457"),
    ({"type": "contains-any", "value": "Lyon, Paris"}, "Paris", True, "contains.ts, index.js:1468-1470: comma list, some"),
    ({"type": "contains-any", "value": ["lyon", "nice"]}, "Paris", False, "contains.ts, index.js:1470"),
    ({"type": "icontains-any", "value": ["PARIS"]}, "paris", True, "contains.ts, index.js:1483"),
    ({"type": "not-contains-any", "value": ["x", "Par"]}, "Paris", False, "contains.ts, index.js:1470: !== inverse"),
    ({"type": "contains-all", "value": ["a", "b"]}, "a only", False, "contains.ts, index.js:1496-1497: every"),
    ({"type": "contains-all", "value": '"a, b", c'}, "a, b and c", True, "contains.ts, index.js:1426-1438: quoted field keeps its comma"),
    ({"type": "not-contains-all", "value": ["a", "b"]}, "a only", True, "contains.ts, index.js:1497: missing -> not-all passes"),
    ({"type": "icontains-all", "value": "A,B"}, "a b", True, "contains.ts, index.js:1510-1511"),
    ({"type": "not-icontains-all", "value": ["A", "B"]}, "a b", False, "contains.ts, index.js:1511"),
    ({"type": "starts-with", "value": "Hel"}, "Hello", True, "startsWith.ts, index.js:3919"),
    ({"type": "not-starts-with", "value": "Hel"}, "Hello", False, "startsWith.ts, index.js:3919"),
    ({"type": "regex", "value": "\\d{3}"}, "abc 123", True, "regex.ts, index.js:3207: RegExp.test searches"),
    ({"type": "not-regex", "value": "("}, "abc", False, "regex.ts, index.js:3200-3205: invalid pattern fails either way"),
    ({"type": "is-json"}, '{"a": 1}', True, "json.ts, index.js:2273-2275"),
    ({"type": "is-json"}, "{a: 1}", False, "json.ts, index.js:2276-2277: JSON.parse rejects it"),
    ({"type": "not-is-json"}, "hello", True, "json.ts, index.js:2277: pass = inverse"),
    ({"type": "is-json", "value": {"type": "object", "required": ["a"]}}, '{"b": 1}', False,
     "json.ts, index.js:2291-2293: Ajv validation"),
    ({"type": "contains-json"}, 'Here: {"a": 1} done', True, "json.ts, index.js:2309-2310 and logger js:315-341"),
    ({"type": "contains-json"}, "no json here", False, "json.ts, index.js:2310"),
    ({"type": "contains-json", "value": {"type": "object", "required": ["b"]}}, 'x {"a": 1}', False,
     "json.ts, index.js:2323-2328"),
    ({"type": "levenshtein", "value": "Paris"}, "Pariss", True, "levenshtein.ts, index.js:2355-2356: threshold ?? 5"),
    ({"type": "levenshtein", "value": "Paris", "threshold": 0}, "Pariss", False, "levenshtein.ts, index.js:2355: 0 stays 0"),
    ({"type": "not-levenshtein", "value": "Paris"}, "Lyon", False, "levenshtein.ts, index.js:2356: distance 5 <= 5, inverted"),
    ({"type": "python", "value": "output == 'Paris'"}, "Paris", True, "python.ts, index.js:2711-2721: one line is `return <line>`"),
    ({"type": "python", "value": "len(output) - 5"}, "abc", False, "index.js:2657-2659: a number passes when > 0"),
    ({"type": "python", "value": "len(output) / 10", "threshold": 0.5}, "abc", False, "index.js:2657: score >= threshold"),
    ({"type": "python", "value": "if 'a' in output:\n  return {'pass': True, 'score': 1, 'reason': 'ok'}\nreturn False"},
     "abc", True, "python.ts, index.js:2713-2720: several lines are the body; index.js:2672-2686: an object"),
    ({"type": "python", "value": "'true'"}, "abc", True, "index.js:2693: the string 'true' is a pass"),
    ({"type": "not-python", "value": "output.startswith('x')"}, "abc", True, "index.js:2640-2642: !== inverse"),
    ({"type": "not-python", "value": "1/0"}, "abc", False, "python.ts, index.js:2731-2737: an error fails either way"),
    ({"type": "python", "value": "file://grader.py"}, "Paris", True, "python file: get_assert(output, context)"),
    ({"type": "python", "value": "file://grader.py:uses_vars"}, "Paris", True, "python file: a named function; context.vars"),
    ({"type": "javascript", "value": "output.length > 2"}, "abc", True, "javascript.ts, index.js:2169-2181 and :2208-2215"),
    ({"type": "javascript", "value": "const n = output.length; n - 5"}, "abc", False, "buildFunctionBody, index.js:2171-2177; a number > 0"),
    ({"type": "javascript", "value": "output.length / 10", "threshold": 0.2}, "abc", True, "index.js:2217: score >= threshold"),
    ({"type": "not-javascript", "value": "output.includes('z')"}, "abc", True, "index.js:2209: !== inverse"),
    ({"type": "javascript", "value": "({pass: false, score: 0.2, reason: 'no'})"}, "x", False, "index.js:2226-2232: an object's pass"),
    ({"type": "javascript", "value": "file://grader.js"}, "Paris", True, "a CommonJS module's exported function"),
    ({"type": "similar", "value": "Paris is lovely"}, "lovely is Paris", True,
     "similar.ts, index.js:713: cosine >= threshold (0.75); letter counts are equal"),
    ({"type": "similar", "value": "aaaa"}, "zzzz", False, "index.js:713: cosine ~0 < 0.75"),
    ({"type": "similar", "value": "abc", "threshold": 0.5}, "abd", True, "index.js:713: cosine 2/3 >= 0.5"),
    ({"type": "bleu", "value": "the cat sat on the mat"}, "the cat sat on the mat", True, "bleu.ts, index.js:1327-1337: 1.0 >= 0.5"),
    ({"type": "bleu", "value": "the cat sat on the mat"}, "a dog ran", False, "bleu.ts: no overlap, 1e-7 smoothing"),
    ({"type": "bleu", "value": ["the cat is on the mat", "there is a cat on the mat"], "threshold": 0.3},
     "the cat is on the mat today", True, "bleu.ts, index.js:1281-1288: the closest reference length"),
    ({"type": "not-bleu", "value": "hello there general kenobi"}, "hello", True,
     "bleu.ts, index.js:1239-1242: brevity penalty exp(1 - 4/1) keeps it under 0.5, inverted"),
    ({"type": "rouge-n", "value": "the cat sat on the mat"}, "The cat sat on the mat", True,
     "rouge.ts, index.js:3259-3272: both lowercased; F1 1.0 >= 0.75"),
    ({"type": "rouge-n", "value": "the cat sat on the mat"}, "the cat sat", False,
     "rouge.ts, index.js:3245-3258: precision 1, recall 3/6, F1 0.67 < 0.75"),
    ({"type": "rouge-n", "value": "the cat sat on the mat", "threshold": 0.6}, "the cat sat", True,
     "rouge.ts, index.js:3265: threshold from the assertion"),
    ({"type": "rouge-n", "value": "the the the cat"}, "the cat", False,
     "rouge.ts, index.js:3252-3254: clipped counts, overlap 2, recall 2/4, F1 0.67"),
    ({"type": "not-rouge-n", "value": "the cat sat on the mat"}, "a dog ran", True,
     "rouge.ts, index.js:3254: no overlap scores 0, inverted"),
    ({"type": "rouge-n", "value": 'he said "no," then left.'}, 'He said "no," then left.', True,
     "js-rouge src/tokenize.ts: the same quote and punctuation tokens"),
    # The grading model's reply is scripted by grader_says (tests/support/openai_chat_server.py).
    ({"type": "model-graded-closedqa", "value": "names Paris " + grader_says("It names Paris.\nY\nY")}, "Paris", True,
     "matchesClosedQa, graders-DC7jJ-Ea.js:2068: the reply ends with Y"),
    ({"type": "model-graded-closedqa", "value": "names Lyon " + grader_says("It does not.\nN\nN")}, "Paris", False,
     "graders-DC7jJ-Ea.js:2068-2070: ends with N"),
    ({"type": "model-graded-closedqa", "value": "names Paris " + grader_says("Yes, it does.")}, "Paris", False,
     "graders-DC7jJ-Ea.js:2068-2071: a reply not ending in Y is a fail (malformed)"),
    ({"type": "not-model-graded-closedqa", "value": "names Paris " + grader_says("fine\nY")}, "Paris", True,
     "modelGradedClosedQa.ts, index.js:2384-2391: not- is not read"),
    ({"type": "factuality", "value": "Paris is the capital " + grader_says('{"category": "A", "reason": "subset"}')},
     "Paris", True, "matchesFactuality, graders-DC7jJ-Ea.js:1917-1929 and :1896-1916: A scores 1"),
    ({"type": "factuality", "value": "Lyon is the capital " + grader_says('Here: {"category": "d"}')},
     "Paris", False, "graders-DC7jJ-Ea.js:1921 (upper-cased) and :1901: D scores 0"),
    ({"type": "factuality", "value": "Paris " + grader_says("(C) The same details.")}, "Paris", True,
     "parseLegacyFactualityResponse, graders-DC7jJ-Ea.js:1934-1943: the (C) letter"),
    ({"type": "factuality", "value": "Paris " + grader_says('{"category": "F"}')}, "Paris", False,
     "graders-DC7jJ-Ea.js:1922: a letter outside A-E fails"),
    # answer-relevance: the grader's question is scripted by the answer itself (the generation
    # prompt holds the answer); the query is the prompt, embedded as letter counts: cosine 0.58.
    ({"type": "answer-relevance", "threshold": 0.5}, "Paris " + grader_says("What is the capital of France?"), True,
     "matchesAnswerRelevance, index.js:485-540: mean cosine 0.58 >= 0.5"),
    ({"type": "answer-relevance", "threshold": 0.7}, "Paris " + grader_says("What is the capital of France?"), False,
     "index.js:520: 0.58 < 0.7"),
    ({"type": "answer-relevance"}, "Paris " + grader_says("zzz"), True,
     "answerRelevance.ts, index.js:1061: threshold ?? 0, and a cosine near 0 is >= 0 - EPSILON"),
    ({"type": "latency", "threshold": 60000}, "fast", True, "latency.ts, index.js:2342: latency <= threshold"),
    ({"type": "not-latency", "threshold": 60000}, "fast", False, "latency.ts, index.js:2342: inverted"),
]


def write_config(folder: Path, base_url: str) -> Path:
    """A promptfoo config with one test per row, its model the echo server at ``base_url``."""
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "description": "verdict parity",
        "prompts": [PREFIX + "{{reply}}"],
        "providers": [{"id": "openai:chat:gpt-4o-mini", "config": {"apiBaseUrl": base_url}}],
        "tests": [{"description": f"row {i}", "vars": {"reply": reply}, "assert": [assertion]}
                  for i, (assertion, reply, _, _) in enumerate(ROWS)],
    }
    (folder / "grader.py").write_text(
        "def get_assert(output, context):\n    return output == 'Paris'\n\n\n"
        "def uses_vars(output, context):\n"
        "    return {'pass': output == context['vars']['reply'], 'score': 1, 'reason': 'matches its var'}\n")
    (folder / "grader.js").write_text("module.exports = (output, context) => output === context.vars.reply;\n")
    path = folder / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    return path


def run_imported(config, out, monkeypatch) -> dict[str, dict]:
    """Import ``config`` into ``out``, run it in-process; the result of each case's own evaluator."""
    return {r["case_id"]: r for r in run_imported_results(config, out, monkeypatch)}


def run_imported_results(config, out, monkeypatch) -> list[dict]:
    """Import ``config`` into ``out``, run it in-process; every result of the cases' own evaluators."""
    imported = import_promptfoo(config, "parity")
    assert imported.report.findings == []
    write_tree(out, imported.files())
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    spec = load_eval(out / "eval.yaml")
    info = prepare_cases(spec, new_run_id(spec.name))
    asyncio.run(produce_traces(spec, info.run_dir))
    asyncio.run(evaluate_traces(spec, info.run_dir))
    results = [json.loads(line) for line in info.run_dir.results.read_text().splitlines()]
    return [r for r in results if r["evaluator"].startswith("assert-")]


# `./dev test` installs this version here when npm is on the machine (ensure_promptfoo in ./dev).
PINNED_PROMPTFOO = Path(__file__).parents[2] / ".venv" / "promptfoo-0.121.20" / "node_modules" / ".bin" / "promptfoo"
PROMPTFOO_MISSING = ("PROMPTFOO PARITY NOT CHECKED: promptfoo or node is missing (./dev test installs promptfoo 0.121.20 "
                     "when node and npm are on the machine; or set EVALH_PROMPTFOO to its executable)")


def promptfoo_command() -> list[str] | None:
    """``$EVALH_PROMPTFOO`` (the path of a promptfoo executable), the pinned promptfoo
    ``./dev test`` installs, or ``promptfoo`` on PATH; None without one (or without node)."""
    found = os.environ.get("EVALH_PROMPTFOO") or (str(PINNED_PROMPTFOO) if PINNED_PROMPTFOO.is_file()
                                                  else shutil.which("promptfoo"))
    return [found] if found and shutil.which("node") is not None else None


def required_promptfoo() -> list[str]:
    """The promptfoo command of :func:`promptfoo_command`; without one the calling test is
    skipped, saying so in the warnings summary too, not only among the skips."""
    command = promptfoo_command()
    if command is None:
        warnings.warn(PROMPTFOO_MISSING, stacklevel=2)
        pytest.skip(PROMPTFOO_MISSING)
    return command


def promptfoo_verdicts(command: list[str], config: Path, base_url: str, home: Path) -> list[bool]:
    """promptfoo's own pass/fail per test of ``config``, in test order."""
    return [r["success"] for r in sorted(run_promptfoo(command, config, base_url, home), key=lambda r: r["testIdx"])]


def run_promptfoo(command: list[str], config: Path, base_url: str, home: Path) -> list[dict[str, Any]]:
    """Run promptfoo itself on ``config`` against the loopback model at ``base_url``: its
    ``results.json`` result rows (``testIdx``, ``success``, ``gradingResult``)."""
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-not-a-real-key", "PROMPTFOO_DISABLE_TELEMETRY": "1",
           "PROMPTFOO_DISABLE_UPDATE": "1", "PROMPTFOO_CONFIG_DIR": str(home / "promptfoo-home"),
           "OPENAI_BASE_URL": base_url}
    out = home / "results.json"
    ran = subprocess.run([*command, "eval", "-c", str(config), "--no-cache", "--no-table", "--no-write", "-o", str(out)],
                         env=env, cwd=home, capture_output=True, text=True, timeout=300)
    assert out.exists(), ran.stdout[-2000:] + ran.stderr[-2000:]
    rows: list[dict[str, Any]] = json.loads(out.read_text())["results"]["results"]
    return rows


def write_tests_config(folder: Path, base_url: str, tests: list[dict[str, Any]],
                       default: dict[str, Any] | None = None) -> Path:
    """A promptfoo config of ``tests`` (each with a ``reply`` var: the echo model's answer)
    and ``defaultTest`` ``default``, its model the echo server at ``base_url``."""
    config = {"prompts": [PREFIX + "{{reply}}"],
              "providers": [{"id": "openai:chat:gpt-4o-mini", "config": {"apiBaseUrl": base_url}}],
              **({"defaultTest": default} if default else {}),
              "tests": [{"description": f"row {i}", **test} for i, test in enumerate(tests)]}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def case_verdicts(results: list[dict[str, Any]], count: int) -> list[bool]:
    """Each case's verdict (``test-1`` ... ``test-<count>``): every result of it passed."""
    return [all(r["passed"] for r in results if r["case_id"] == f"test-{i + 1}") for i in range(count)]
