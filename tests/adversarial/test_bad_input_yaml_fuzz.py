"""Any eval.yaml (or YAML dataset) gives a loaded spec or a ConfigError of one-line issues.

Never a traceback, never a hang: generated documents (random shapes over the real keys,
anchors and aliases, ``${VAR}`` references, hostile fragments spliced into a valid file,
arbitrary bytes) are loaded in-process, each under a wall-clock alarm. The examples are
derandomized, so CI runs the same fixed budget every time.
"""

from __future__ import annotations

import re
import signal
import textwrap
from contextlib import contextmanager

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalh_pipeline.config import ConfigError, EvalSpec
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.config.dataset import iter_dataset

BUDGET = settings(max_examples=250, derandomize=True, database=None, deadline=None,
                  suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
SECONDS_PER_EXAMPLE = 20  # a hang, not slowness: an example takes milliseconds
ISSUE = re.compile(r"^(eval|cases)\.yaml(:\d+)?( [^\n]+)?: [^\n]+$")
ENV = {"FUZZ_VAR": "fuzz-value", "FUZZ_NUM": "3"}

VALID = textwrap.dedent("""\
    eval: {name: fuzz}
    dataset: {type: jsonl, path: cases.jsonl}
    systems:
      - {name: a, adapter: python_function, target: agent:run}
    evaluators:
      - {name: says_x, type: contains_text, config: {all_of: [x]}}
    """)

KEYS = ["eval", "name", "dataset", "type", "path", "systems", "adapter", "target", "evaluators", "config",
        "pass_criteria", "all_required", "run", "max_concurrency", "retry", "on", "output", "workspace",
        "copy_from", "base_path", "object_storage", "metrics", "price_table_path", "gates", "schedule",
        "drift_cron", "timezone", "endpoint", "headers", "command", "env", "pattern", "filter", "sample",
        "schema_version", "timeout_seconds", "metadata", "<<"]
WORDS = ["${FUZZ_VAR}", "${FUZZ_NUM}", "${NOT_SET}", "${FUZZ_VAR:-d}", "memory://x/runs", "../..", "/etc",
         "agent:run", "http://127.0.0.1:1/x", "https://h/x?key=${FUZZ_VAR}", "jsonl", "yaml", "python_function",
         "http", "cli", "contains_text", "regex_match", "tempdir_snapshot", "git", "local_files", "* * * * *",
         "(", "9" * 40, "\u0000", "\ud800", "\u202e", "é", "", " ", "null", "~", "yes", "on", "1e999", "NaN"]

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=12), st.sampled_from(WORDS),
)
keys = st.one_of(st.sampled_from(KEYS), st.text(max_size=8))
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4), max_leaves=25,
)


@st.composite
def eval_documents(draw) -> str:
    """A YAML text: a valid eval with parts replaced, a random mapping, or either with aliases."""
    base = yaml.safe_load(VALID)
    if draw(st.booleans()):
        doc = draw(st.dictionaries(keys, values, max_size=6))
    else:
        doc = base
        for _ in range(draw(st.integers(0, 4))):
            target = doc
            path = draw(st.lists(st.sampled_from(KEYS[:12]), min_size=1, max_size=3))
            for key in path[:-1]:
                nxt = target.get(key) if isinstance(target, dict) else None
                if not isinstance(nxt, dict):
                    break
                target = nxt
            if isinstance(target, dict):
                target[path[-1]] = draw(values)
    if draw(st.booleans()) and isinstance(doc, dict) and doc:
        # The same object twice: PyYAML writes an anchor and an alias.
        shared = draw(values)
        for key in draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=3)):
            doc[key] = shared
    return yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)


FRAGMENTS = ["&a ", "? {k: v}\n: x\n", "*a", "*undefined", "<<: *a\n", "!!python/object:os.system ", "!!binary ", "!custom ",
             "%YAML 1.1\n", "---\n", "...\n", "\t", "\ufeff", "\x00", "\x85", "[" * 300, "{" * 120 + "}" * 120,
             ": ", "- ", "? ", "|\n", ">-\n", "'", '"', "#", "\\", "${", "}", "\r\n", "\u2028", " " * 40]


@st.composite
def spliced_documents(draw) -> str:
    """A valid eval.yaml with hostile fragments inserted at random places."""
    text = VALID
    for _ in range(draw(st.integers(1, 5))):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(FRAGMENTS) | st.text(max_size=6)) + text[at:]
    return text


@contextmanager
def alarm(seconds: int):
    def hung(signum, frame):
        raise AssertionError(f"loading took more than {seconds}s: a hang")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "cases.jsonl").write_text('{"id": "c1", "input": {}}\n')
    (tmp_path / "agent.py").write_text("def run(case, variant):\n    return {'final_answer': 'x'}\n")
    return tmp_path


def check_eval(folder, data: bytes) -> None:
    path = folder / "eval.yaml"
    path.write_bytes(data)
    try:
        with alarm(SECONDS_PER_EXAMPLE):
            spec = load_eval(path, env=ENV)
    except ConfigError as exc:
        assert exc.issues, "a ConfigError without an issue"
        for issue in exc.issues:
            assert ISSUE.match(str(issue)), f"not a one-line issue: {str(issue)!r}"
    else:
        assert isinstance(spec, EvalSpec)


@BUDGET
@given(text=eval_documents())
def test_any_eval_shape_loads_or_is_a_one_line_config_error(folder, text):
    check_eval(folder, text.encode("utf-8", "surrogatepass"))


@BUDGET
@given(text=spliced_documents())
def test_a_valid_eval_with_hostile_fragments_spliced_in_loads_or_is_a_one_line_config_error(folder, text):
    check_eval(folder, text.encode("utf-8", "surrogatepass"))


@BUDGET
@given(data=st.binary(max_size=200) | st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_arbitrary_bytes_as_eval_yaml_are_a_one_line_config_error(folder, data):
    check_eval(folder, data)


@BUDGET
@given(cases=st.lists(values, max_size=5), extra=st.dictionaries(keys, values, max_size=3))
def test_any_yaml_dataset_shape_gives_cases_or_a_one_line_config_error(folder, cases, extra):
    path = folder / "cases.yaml"
    path.write_text(yaml.safe_dump({**extra, "cases": cases}, allow_unicode=True), encoding="utf-8",
                    errors="surrogatepass")
    try:
        with alarm(SECONDS_PER_EXAMPLE):
            loaded = list(iter_dataset(path, "yaml"))
    except ConfigError as exc:
        for issue in exc.issues:
            assert ISSUE.match(str(issue)), f"not a one-line issue: {str(issue)!r}"
    else:
        assert len(loaded) == len(cases)
