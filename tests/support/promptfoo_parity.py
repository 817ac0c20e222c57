"""Verdict-parity fixtures for ``evalh import promptfoo``: one promptfoo test per row, whose
answer (the echo model's reply) and assertion give the verdict promptfoo's own source decides.

Citations are to promptfoo 0.121.20 as published on npm: ``src/assertions/<file>.ts`` and the
line of its bundle ``dist/src/index.js`` where the rule is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.support.openai_chat_server import PREFIX

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
    path = folder / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    return path
