"""``promptfoo_assert``: promptfoo's deterministic assertions with promptfoo's own verdict rules.

``evalh import promptfoo`` maps a promptfoo assertion here when no evalh evaluator gives the
identical verdict (the ``contains`` family goes to ``contains_text``). Each rule below follows
promptfoo's source as released in promptfoo 0.121.20 on npm (the version the parity test
runs): each rule cites ``src/assertions/<file>.ts`` and the line of the published bundle
``dist/src/index.js`` it was read from, so a suite keeps its verdicts when it moves:

- the output is the answer text (promptfoo's ``outputString``); with ``openai_tool_calls``, a
  trace whose model called tools has the output promptfoo's OpenAI chat provider gives it (the
  calls in OpenAI's form, or the whole message when it also wrote text: :func:`openai_chat_output`),
  as JSON text where a rule reads text, as promptfoo's ``outputString`` is;
- ``inverse`` is promptfoo's ``not-`` prefix: the verdict is flipped (``not-regex`` with an
  invalid pattern still fails, as in promptfoo);
- the score is 1 or 0 as promptfoo's.

``contains-json`` reads each ``{...}`` candidate as YAML in JSON mode (js-yaml there, PyYAML
here) without promptfoo's rewrite of ``//`` comments, so an answer with commented JSON may
differ.

JavaScript regular expressions are run by Python's ``re`` as :func:`js_regex` translates them;
the engines agree on the patterns prompts use, not on every corner (``\\s`` and non-ASCII
spaces, syntax only one of them accepts), which the importer's report does not try to detect.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Callable
from typing import Any, Literal

import yaml
from jsonschema import validators
from jsonschema.protocols import Validator
from jsonschema.exceptions import SchemaError
from pydantic import model_validator

from evalh_pipeline.common.fields import as_text
from evalh_pipeline.evaluators.base import EvaluatorConfigModel, EvaluatorContext, SyncEvaluator, Verdict
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace

AssertionType = Literal[
    "equals", "contains", "icontains", "contains-any", "icontains-any", "contains-all", "icontains-all",
    "starts-with", "regex", "is-json", "contains-json", "levenshtein", "latency", "cost", "bleu",
    "is-valid-openai-tools-call", "rouge-n",
]
_LIST_TYPES = ("contains-any", "icontains-any", "contains-all", "icontains-all")
_NEEDS_VALUE = ("equals", "contains", "icontains", *_LIST_TYPES, "starts-with", "regex", "levenshtein")
_JS_NAMED_GROUP = re.compile(r"\(\?<(?![=!])")


class PromptfooAssertConfig(EvaluatorConfigModel):
    """One promptfoo assertion: its type (without ``not-``), ``inverse``, ``value``, ``threshold``."""

    TRACE_FIELDS = ("output.final_answer",)

    assertion: AssertionType
    inverse: bool = False
    value: Any = None
    threshold: float | None = None
    metric: str | None = None
    #: The output is the tool calls when the model made some (the variant is promptfoo's
    #: ``openai:chat`` provider with ``tools``), as promptfoo hands its assertions.
    openai_tool_calls: bool = False
    #: ``is-valid-openai-tools-call``: the provider's ``tools`` (None: it has none).
    tools: list[dict[str, Any]] | None = None

    def trace_fields_read(self) -> tuple[str, ...]:
        """The answer, and the tool calls when they are the output."""
        tool_calls = self.openai_tool_calls or self.assertion == "is-valid-openai-tools-call"
        return (*self.TRACE_FIELDS, *(("tool_calls",) if tool_calls else ()))

    @model_validator(mode="after")
    def _checked(self) -> PromptfooAssertConfig:
        # promptfoo's invariants (raised when the assertion runs) are load errors here.
        kind, value = self.assertion, self.value
        if kind in ("contains", "icontains") and not contains_value(value):
            # src/assertions/contains.ts (index.js:1440-1446)
            raise ValueError(f'"{kind}" assertion type must have a string or number value')
        if kind in _LIST_TYPES:
            if not value:
                raise ValueError(f'"{kind}" assertion type must have a value')  # contains.ts (index.js:1467)
            if isinstance(value, str):
                self.value = split_comma_separated(value)
            elif not isinstance(value, list):
                raise ValueError(f'"{kind}" assertion type must have an array value')
        if kind in ("starts-with", "regex", "levenshtein") and not (isinstance(value, str) and (value or kind == "levenshtein")):
            # startsWith.ts (index.js:3917-3918), regex.ts (:3197-3198), levenshtein.ts (:2353)
            raise ValueError(f'"{kind}" assertion type must have a string value')
        if kind == "rouge-n" and not isinstance(value, str):
            raise ValueError('"rouge" assertion type must be a string value')  # rouge.ts (index.js:3260)
        if kind == "bleu" and not (isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))):
            raise ValueError('"bleu" assertion type must have a string or array of strings value')  # bleu.ts (index.js:1328)
        if kind in ("is-json", "contains-json") and value:
            self.value = _schema_of(value)  # json.ts (index.js:2279-2289): a truthy value is a schema
        if kind == "latency" and self.threshold is None:
            raise ValueError("Latency assertion must have a threshold in milliseconds")  # latency.ts (index.js:2340)
        if kind == "cost" and self.threshold is None:
            raise ValueError("Cost assertion must have a threshold")  # cost.ts (index.js:1597)
        return self


def openai_chat_output(trace: Trace) -> Any:
    """The output promptfoo's OpenAI chat provider returns for the answer of ``trace``
    (src/providers/openai/chat.ts, dist/src/chat-CG-lQMid.js:337-343): the text; when the model
    called tools, the calls as OpenAI sends them (``arguments`` a JSON string), or the whole
    assistant message when it wrote text as well. The message here has the fields a trace
    keeps (``role``, ``content``, ``tool_calls``), not every field OpenAI's reply carries."""
    text = as_text(trace.output.final_answer)
    if not trace.tool_calls:
        return text
    calls = [{"id": call.id, "type": "function",
              "function": {"name": call.name, "arguments": json.dumps(call.arguments, separators=(",", ":"),
                                                                      ensure_ascii=False)}}
             for call in trace.tool_calls]
    return {"role": "assistant", "content": text, "tool_calls": calls} if text else calls


def output_string(output: Any) -> str:
    """promptfoo's ``coerceString`` (dist/src/graders-DC7jJ-Ea.js:469-472): text as it is, any
    other value as ``JSON.stringify`` writes it."""
    return output if isinstance(output, str) else json.dumps(output, separators=(",", ":"), ensure_ascii=False)


def tools_call_errors(output: Any, tools: list[dict[str, Any]] | None) -> str:
    """Why ``output`` is not a valid OpenAI tools call for ``tools`` ("" when it is), as
    src/assertions/openai.ts (index.js:2489-2540) and validateFunctionCall
    (dist/src/util--ConadPK.js:844-855) decide: a non-empty list of calls (or a message's
    ``tool_calls``), each naming a function of ``tools`` with JSON arguments its parameters'
    schema accepts."""
    if isinstance(output, dict) and "tool_calls" in output:
        output = output["tool_calls"]
    if not isinstance(output, list) or not output or any(
            not isinstance(call, dict) or not isinstance(call.get("function"), dict)
            or not isinstance(call["function"].get("name"), str) or not isinstance(call["function"].get("arguments"), str)
            for call in output):
        return f"OpenAI did not return a valid-looking tools response: {output_string(output)}"
    if not tools:
        return "No tools configured in provider, but output contains tool calls"
    functions = [t["function"] for t in tools if t.get("type") == "function" and isinstance(t.get("function"), dict)]
    for call in output:
        name = call["function"]["name"]
        try:
            arguments = parse_json(call["function"]["arguments"])
        except ValueError as exc:
            return f"Call to \"{name}\" has arguments that are not JSON: {exc}"
        schema = next((f.get("parameters") for f in functions if f.get("name") == name), None)
        if not schema:
            return f'Called "{name}", but there is no function with that name'
        errors = [e.message for e in validators.validator_for(schema, default=validators.Draft7Validator)(schema)
                  .iter_errors(arguments)]
        if errors:
            return f'Call to "{name}" does not match schema: {", ".join(errors)}'
    return ""


def contains_value(value: Any) -> bool:
    """promptfoo's ``isContainsValue``: a non-empty string or a number that is not NaN."""
    if isinstance(value, bool):
        return False
    return (isinstance(value, str) and value != "") or (isinstance(value, (int, float)) and not math.isnan(value))


def _schema_of(value: Any) -> Any:
    # json.ts (index.js:2279-2289): a string value is read as YAML (JSON is YAML) and compiled
    # by Ajv (JSON Schema draft-07 unless the schema names its draft).
    schema = yaml.safe_load(value) if isinstance(value, str) else value
    if not isinstance(schema, (bool, dict)):
        raise ValueError("is-json/contains-json value must be a JSON schema (an object or a boolean)")
    if isinstance(schema, dict):
        try:
            validators.validator_for(schema, default=validators.Draft7Validator).check_schema(schema)
        except SchemaError as exc:
            raise ValueError(f"invalid JSON schema: {exc.message}") from None
    return schema


def split_comma_separated(value: str) -> list[str]:
    """promptfoo's ``parseCommaSeparatedValues`` (src/assertions/contains.ts, index.js:1361-1438): fields split on commas, trimmed; ``"quoted, fields"`` keep commas and take ``\\"``,
    ``\\\\`` and ``""`` escapes; repeated commas give no empty field."""
    results: list[str] = []
    i, n = 0, len(value)
    while i < n:
        while i < n and (value[i].isspace() or value[i] == ","):
            i += 1
        if i >= n:
            break
        if value[i] == '"':
            i, field, closed = i + 1, "", False
            while i < n:
                if value[i] == "\\" and i + 1 < n and value[i + 1] in '"\\':
                    field, i = field + value[i + 1], i + 2
                elif value[i] == '"' and i + 1 < n and value[i + 1] == '"':
                    field, i = field + '"', i + 2
                elif value[i] == '"':
                    i, closed = i + 1, True
                    break
                else:
                    field, i = field + value[i], i + 1
            if not closed:
                raise ValueError("Unterminated quoted field in contains assertion value")
            while i < n and value[i].isspace():
                i += 1
            if i < n and value[i] != ",":
                raise ValueError("Expected comma after quoted field in contains assertion value")
            results.append(field)
        else:
            start = i
            while i < n and value[i] != ",":
                i += 1
            results.append(value[start:i].strip())
    return results


def js_string(value: Any) -> str:
    """JavaScript's ``String(value)`` for JSON values (``5.0`` is ``"5"``, ``True`` is ``"true"``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return str(value)


def js_regex(pattern: str) -> re.Pattern[str]:
    """JavaScript's ``new RegExp(pattern)`` (no flags) for Python's ``re``: ``$`` outside a
    class matches only at the very end (``\\Z``; Python's also before a final newline),
    ``(?<name>`` groups are renamed, and ``\\d``, ``\\w``, ``\\b`` are ASCII as in JavaScript
    (``re.ASCII``; it makes ``\\s`` ASCII too, where JavaScript also matches Unicode spaces)."""
    out, in_class, i = [], False, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if char == "[" and not in_class:
            in_class = True
        elif char == "]" and in_class:
            in_class = False
        elif char == "$" and not in_class:
            char = "\\Z"
        elif char == "(" and not in_class and _JS_NAMED_GROUP.match(pattern, i):
            char, i = "(?P<", i + 2
        out.append(char)
        i += 1
    return re.compile("".join(out), re.ASCII)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # JSON.parse rejects NaN and Infinity; json.loads would not


def parse_json(text: str) -> Any:
    """JavaScript's ``JSON.parse``: raises ValueError where it throws."""
    return json.loads(text, parse_constant=_reject_constant)


def _strict_equal(a: Any, b: Any) -> bool:
    """``util.isDeepStrictEqual`` over JSON values (``true`` is not ``1``; ``1`` is ``1.0``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_strict_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return False
    return bool(a == b)


def bleu_score(candidate: str, references: list[str]) -> float:
    """promptfoo's ``calculateBleuScore`` (src/assertions/bleu.ts, index.js:1239-1326): BLEU-4
    with equal weights over lowercased whitespace tokens, the closest reference length for the
    brevity penalty, 1e-7 for a zero precision, and orders longer than the candidate skipped."""
    if candidate.strip() == "":
        return 0.0
    words = candidate.lower().strip().split()
    refs = [r.lower().strip().split() or [""] for r in references]
    closest = len(refs[0])
    for ref in refs[1:]:
        if abs(len(ref) - len(words)) < abs(closest - len(words)) or (
                abs(len(ref) - len(words)) == abs(closest - len(words)) and len(ref) < closest):
            closest = len(ref)
    orders: list[float] = []
    for n in range(1, 5):
        grams = _ngrams(words, n)
        if not grams:
            continue
        counts = _counts(grams)
        best = max(sum(min(c, _counts(_ngrams(ref, n)).get(g, 0)) for g, c in counts.items()) for ref in refs)
        orders.append(best / len(grams))
    penalty = 1.0 if len(words) > closest else math.exp(1 - closest / len(words))
    weight = 0.25 / (0.25 * len(orders))
    return penalty * math.exp(sum(weight * math.log(p if p != 0 else 1e-7) for p in orders))


_CONTRACTIONS = [re.compile(rf"(?<![\w\u200c\u200d]){pattern}(?![\w\u200c\u200d])", re.IGNORECASE) for pattern in (
    "(can)(not)", "(d)('ye)", "(gim)(me)", "(gon)(na)", "(got)(ta)", "(lem)(me)", "(more)('n)", "(wan)(na)(?= )",
    "('t)(is)", "('t)(was)")]
_QUOTE = re.compile(r"``|''|\"")


def _category(char: str, *prefixes: str) -> bool:
    return bool(char) and unicodedata.category(char).startswith(prefixes)


def treebank_tokens(text: str) -> list[str]:
    """js-rouge 3.2.3's ``treeBankTokenize`` (src/tokenize.ts), the tokens promptfoo's rouge-n
    counts: punctuation split off, contractions split, double quotes made opening ````` or closing
    ``''`` tokens. Its rule for a quote after a footnote marker is not followed (such a quote is
    taken as closing), and ``\\w`` stands for Unicode's ID_Continue."""
    text = re.sub(r"\s+", " ", text).strip()
    if not text:
        return []
    inside = False
    parts: list[str] = []
    last = 0
    for found in _QUOTE.finditer(text):
        quote, index = found.group(), found.start()
        before = text[index - 1] if index > 0 else ""
        opening_context = index == 0 or before.isspace() or _category(before, "P") or before == "<" \
            or text[index - 2:index] == "``"
        later = _QUOTE.search(text, index + 2)
        inside = quote == "``" or (
            (index + len(quote) < len(text) or index == 0 or before.isspace() or _category(before, "Ps") or before == "<")
            and not inside and opening_context and not (before and before in ".!?")
            and (quote == '"' or (index > 0 and _category(text[index + 2:index + 3], "L", "N", "Sc", "Ps")
                                  and later is not None and later.group() == "''")))
        parts += [text[last:index], " `` " if inside else " '' "]
        last = found.end()
    parse = "".join([*parts, text[last:]])
    parse = re.sub(r"\.{3}", " ... ", parse)
    parse = re.sub(r"[:,](?!\d)", r" \g<0> ", parse)
    parse = re.sub(r"[;@#$%&]", r" \g<0> ", parse)
    parse = re.sub(r"([^.])(?<!\b[A-Za-z]\.[A-Za-z])(\.)([\])}>'\s]*)$", r"\1 \2\3 ", parse)
    parse = re.sub(r"[?!]", r" \g<0> ", parse)
    parse = re.sub(r"[\][(){}<>]", r" \g<0> ", parse)
    parse = f" {parse.replace('--', ' -- ')} "
    parse = re.sub(r"([^'])' ", r"\1 ' ", parse)
    parse = re.sub(r"'([sSmMdD]) ", r" '\1 ", parse)
    parse = re.sub(r"('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ", r" \1 ", parse)
    for contraction in _CONTRACTIONS:
        parse = contraction.sub(r" \1 \2 ", parse)
    return re.sub(r"^ | $", "", re.sub(r" {2,}", " ", parse)).split(" ")


def rouge_n_score(candidate: str, reference: str, n: int = 1) -> float:
    """promptfoo's ``rougeNScore`` (src/assertions/rouge.ts, index.js:3245-3258): ROUGE-N F1 over
    clipped n-gram counts of the Treebank tokens (js-rouge's ``fMeasure`` with beta 1 is the
    harmonic mean, precision itself when it equals recall)."""
    cand, ref = treebank_tokens(candidate), treebank_tokens(reference)
    if len(cand) < n or len(ref) < n:
        return 0.0
    cand_grams, ref_counts = _ngrams(cand, n), _counts(_ngrams(ref, n))
    overlap = sum(min(count, ref_counts.get(gram, 0)) for gram, count in _counts(cand_grams).items())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(cand_grams), overlap / sum(ref_counts.values())
    if precision == recall:
        return precision
    # js-rouge src/utils.ts fMeasure with beta 1: the harmonic mean, written as js-rouge rounds it
    if precision > recall:
        return min(precision, recall * (2 / (1 + recall / precision)))
    return min(recall, precision * (2 / (1 + precision / recall)))


def _ngrams(words: list[str], n: int) -> list[str]:
    return [" ".join(words[i:i + n]) for i in range(len(words) - n + 1)] if 0 < n <= len(words) else []


def _counts(grams: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for gram in grams:
        counts[gram] = counts.get(gram, 0) + 1
    return counts


def levenshtein(a: str, b: str) -> int:
    """Edit distance over UTF-16 code units, as ``fastest-levenshtein`` counts JavaScript strings."""
    x, y = _utf16(a), _utf16(b)
    if len(x) < len(y):
        x, y = y, x
    previous = list(range(len(y) + 1))
    for i, cx in enumerate(x, 1):
        current = [i]
        for j, cy in enumerate(y, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (cx != cy)))
        previous = current
    return previous[-1]


def _utf16(text: str) -> list[int]:
    data = text.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(data[i:i + 2], "little") for i in range(0, len(data), 2)]


def extract_json_objects(text: str) -> list[Any]:
    """promptfoo's ``extractJsonObjects`` (src/util/json.ts, dist/src/logger-DZQrH7Cp.js:315-341):
    from each ``{``, the shortest brace-balanced span (closed with ``}`` at the end of the text,
    at most 100,000 characters) that reads as YAML in JSON mode to an object or a list; the
    scan goes on after it."""
    found: list[Any] = []
    limit = 100_000
    i, n = 0, len(text)
    while i < n:
        if text[i] == "{":
            opened, closed, j = 1, 0, i + 1
            while j < min(i + limit, n) and opened > closed:
                opened += text[j] == "{"
                closed += text[j] == "}"
                j += 1
                if opened == closed or j == n or j == i + limit:
                    candidate = text[i:j] + "}" * max(0, opened - closed)
                    try:
                        parsed = yaml.safe_load(candidate)
                    except yaml.YAMLError:
                        if opened == closed:
                            break
                        continue
                    if isinstance(parsed, (dict, list)):
                        found.append(parsed)
                        i = j - 1
                        break
        i += 1
    return found


class PromptfooAssert(SyncEvaluator[PromptfooAssertConfig]):
    """Judges the answer as promptfoo's assertion of the same type would (see the module doc)."""

    reads_case = False

    def __init__(self, name: str, type_name: str, config: dict[str, Any], context: EvaluatorContext | None = None) -> None:
        super().__init__(name, type_name, config, context)
        cfg = self.config
        self._schema: Validator | bool | None = None
        if cfg.assertion in ("is-json", "contains-json") and cfg.value:
            self._schema = validators.validator_for(cfg.value, default=validators.Draft7Validator)(cfg.value) \
                if isinstance(cfg.value, dict) else cfg.value
        self._label = f"{'not-' if cfg.inverse else ''}{cfg.assertion}"

    def evaluate_sync(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        cfg: PromptfooAssertConfig = self.config
        value = openai_chat_output(trace) if cfg.openai_tool_calls else as_text(trace.output.final_answer)
        output = output_string(value)
        detail: dict[str, Any] = {"assertion": self._label}
        if cfg.metric:
            detail["metric"] = cfg.metric
        kind = cfg.assertion
        if kind == "latency":
            # src/assertions/latency.ts (index.js:2339-2349): passes at or under the threshold
            return self._threshold(float(trace.latency_ms), f"Latency {trace.latency_ms}ms", "ms", detail)
        if kind == "cost":
            cost = trace.metrics.cost_usd
            if cost is None:
                # src/assertions/cost.ts (index.js:1598)
                raise ValueError("Cost assertion does not support providers that do not return cost")
            return self._threshold(cost, f"Cost {cost:.2g}", "", detail)
        if kind == "is-valid-openai-tools-call":
            # src/assertions/openai.ts (index.js:2489-2540) reads no `not-`: the verdict is the same
            why = tools_call_errors(openai_chat_output(trace), cfg.tools)
            return _verdict(not why, why, detail)
        if kind == "levenshtein":
            # src/assertions/levenshtein.ts (index.js:2352-2363): distance <= (threshold ?? 5)
            limit = 5.0 if cfg.threshold is None else cfg.threshold
            distance = levenshtein(output, cfg.value)
            detail.update(distance=distance, threshold=limit)
            return self._threshold(float(distance), f"Levenshtein distance {distance}", "", detail, limit)
        if kind == "rouge-n":
            # rouge.ts (index.js:3259-3272): both lowercased; score >= (threshold ?? 0.75), flipped by not-
            threshold = 0.75 if cfg.threshold is None else cfg.threshold
            score = rouge_n_score(output.lower(), cfg.value.lower())
            detail.update(rouge_n=score, threshold=threshold)
            passed = (score >= threshold) != cfg.inverse
            said = "greater than or equal to" if score >= threshold else "less than"
            return Verdict(passed, f"ROUGE-N score {score:.2f} is {said} threshold {threshold:g}",
                           score=1 - score if cfg.inverse else score, detail=detail)
        if kind == "bleu":
            # bleu.ts (index.js:1327-1337): score >= (threshold ?? 0.5), flipped by not-
            threshold = 0.5 if cfg.threshold is None else cfg.threshold
            score = bleu_score(output, cfg.value if isinstance(cfg.value, list) else [cfg.value])
            detail.update(bleu=score, threshold=threshold)
            passed = (score >= threshold) != cfg.inverse
            return Verdict(passed, "Assertion passed" if passed else
                           f"BLEU score {score:.4f} is {'greater' if cfg.inverse else 'less'} than threshold {threshold:g}",
                           score=1 - score if cfg.inverse else score, detail=detail)
        try:
            matched, why = self._matches(kind, output, detail)
        except _Fixed as exc:
            return _verdict(False, str(exc), detail)
        return _verdict(matched != cfg.inverse, why, detail)

    def _matches(self, kind: str, output: str, detail: dict[str, Any]) -> tuple[bool, str]:
        """Whether the positive form holds, and the failing reason (promptfoo's words)."""
        cfg: PromptfooAssertConfig = self.config
        value, neg = cfg.value, "not " if cfg.inverse else ""
        if kind == "equals":
            # src/assertions/equals.ts (index.js:1609-1625): an object value (null and lists too)
            # deep-equals the parsed output; output that is not JSON equals none
            if isinstance(value, (dict, list)) or value is None:
                try:
                    equal = _strict_equal(value, parse_json(output))
                except ValueError:
                    equal = False
                shown = json.dumps(value, separators=(",", ":"))
            else:
                equal, shown = js_string(value) == output, js_string(value)
            return equal, f'Expected output "{output}" to {neg}equal "{shown}"'
        if kind in ("contains", "icontains"):
            # src/assertions/contains.ts (index.js:1446 and :1457)
            needle = js_string(value)
            hit = needle.lower() in output.lower() if kind == "icontains" else needle in output
            return hit, f'Expected output to {neg}contain "{needle}"'
        if kind in _LIST_TYPES:
            fold: Callable[[str], str] = (lambda s: s.lower()) if kind.startswith("i") else (lambda s: s)
            needles = [js_string(v) for v in value]
            present = [fold(n) in fold(output) for n in needles]
            if kind.endswith("-any"):
                # contains.ts (index.js:1470 and :1483)
                return any(present), f'Expected output to {neg}contain one of "{", ".join(needles)}"'
            # contains.ts (index.js:1496-1497 and :1510-1511)
            missing = [n for n, hit in zip(needles, present) if not hit]
            detail["missing"] = missing
            return not missing, (f"Expected output to {neg}contain all of [{', '.join(needles)}]. "
                                 f"Missing: [{', '.join(missing)}]")
        if kind == "starts-with":
            # src/assertions/startsWith.ts (index.js:3919)
            return output.startswith(value), f'Expected output to {neg}start with "{value}"'
        if kind == "regex":
            # src/assertions/regex.ts (index.js:3196-3213): an invalid pattern fails whatever the inverse
            try:
                pattern = js_regex(value)
            except re.error as exc:
                raise _Fixed(f"Invalid regex pattern: {exc}") from None
            return pattern.search(output) is not None, f'Expected output to {neg}match regex "{value}"'
        if kind == "is-json":
            return self._is_json(output)
        return self._contains_json(output)

    def _is_json(self, output: str) -> tuple[bool, str]:
        # src/assertions/json.ts (index.js:2270-2305); not-is-json of JSON that fails the schema passes
        try:
            parsed = parse_json(output)
        except ValueError:
            return False, "Expected output to be valid JSON"
        if self._schema is None:
            return True, "Expected output to be valid JSON"
        errors = self._schema_errors(self._schema, parsed)
        return not errors, (f"JSON does not conform to the provided schema. Errors: {errors}"
                            if errors else "Output is JSON that conforms to the provided schema")

    def _contains_json(self, output: str) -> tuple[bool, str]:
        # src/assertions/json.ts (index.js:2307-2337): with a schema, the first object that
        # validates decides; when none does, the last one's verdict stands
        values = extract_json_objects(output)
        if not values:
            return False, "Expected output to contain valid JSON"
        if self._schema is None:
            return True, "Expected output to contain valid JSON"
        errors = ""
        for value in values:
            errors = self._schema_errors(self._schema, value)
            if not errors:
                return True, "Output contains JSON conforming to the provided schema"
        return False, f"JSON does not conform to the provided schema. Errors: {errors}"

    def _schema_errors(self, schema: Validator | bool, value: Any) -> str:
        if isinstance(schema, bool):
            return "" if schema else "boolean schema is false"
        return ", ".join(e.message for e in schema.iter_errors(value))

    def _threshold(self, measured: float, said: str, unit: str, detail: dict[str, Any],
                   limit: float | None = None) -> Verdict:
        """``measured <= threshold``, flipped by ``not-`` (latency.ts, cost.ts, levenshtein.ts)."""
        cfg: PromptfooAssertConfig = self.config
        threshold = cfg.threshold if limit is None else limit
        assert threshold is not None  # checked at load for latency and cost
        detail["value"] = measured
        passed = (measured <= threshold) != cfg.inverse
        word = "less than or equal to" if cfg.inverse else "greater than"
        return _verdict(passed, f"{said} is {word} threshold {threshold:g}{unit}", detail)


class _Fixed(Exception):
    """A failing verdict promptfoo returns before applying ``not-``."""


def _verdict(passed: bool, reason: str, detail: dict[str, Any]) -> Verdict:
    return Verdict(passed, "Assertion passed" if passed else reason, score=1.0 if passed else 0.0, detail=detail)
