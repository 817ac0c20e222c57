"""YAML loading that remembers where every key came from.

Authored files are parsed with YAML 1.2 booleans (only true/false; ``on``/``yes`` stay
strings, which matters for ``retry.on``), and every key path is mapped to its line so
that validation errors can point at ``eval.yaml:14``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from evalh_pipeline.common.file_kinds import NotARegularFile, read_regular
from evalh_pipeline.config.errors import ConfigError, ConfigIssue
from evalh_pipeline.common.yaml_files import GuardedComposer, describe_yaml_error

KeyPath = tuple[str | int, ...]


class _Loader(GuardedComposer, yaml.SafeLoader):
    """SafeLoader whose booleans are YAML 1.2's: true/false only, with the limits of
    ``common/yaml_files.py`` (depth, aliases)."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


class _DatasetLoader(GuardedComposer, yaml.SafeLoader):
    """PyYAML's SafeLoader as is (YAML 1.1: yes/no/on/off are booleans): eval-harness reads
    dataset files with ``yaml.safe_load``, so a case's ``on``/``yes`` must mean the same here."""


@dataclass(frozen=True)
class DuplicateKey:
    """A key given twice in one mapping: PyYAML (and so eval-harness) keeps the later value."""

    key_path: KeyPath
    line: int  # the repeat, whose value is kept
    first_line: int  # the earlier one, overridden

    def issue(self, file: str) -> ConfigIssue:
        """The one-line message naming both lines."""
        return ConfigIssue(file, self.line, format_key_path(self.key_path),
                           f"duplicate key: the value at {file}:{self.line} overrides the one at "
                           f"{file}:{self.first_line}, as eval-harness reads it (remove one of them)")


@dataclass
class YamlDocument:
    """Parsed data plus a key-path -> line map for error messages."""

    path: Path
    data: Any
    lines: dict[KeyPath, int]

    def line_of(self, key_path: KeyPath) -> int | None:
        """The line of the deepest known prefix of ``key_path``."""
        for end in range(len(key_path), -1, -1):
            line = self.lines.get(tuple(key_path[:end]))
            if line is not None:
                return line
        return None


def format_key_path(key_path: KeyPath) -> str:
    """Render ``("systems", 1, "adapter")`` as ``systems[1].adapter``."""
    out = ""
    for part in key_path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not part or not part.isprintable() or any(c in part for c in ".[] "):
            out += f"[{part!r}]"  # a key that reads ambiguously (or not at all) as a dotted path
        else:
            out += f".{part}" if out else str(part)
    return out


def decode_utf8(data: bytes, file: str, first_line: int = 1) -> str:
    """``data`` as text; raises ``file:line: not UTF-8`` (the line of the first bad byte)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + data.count(b"\n", 0, exc.start)
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError.single(file, line, "", f"not UTF-8 (byte 0x{data[exc.start]:02x} at column {column}); "
                                                 "save the file as UTF-8") from None


def load_yaml(path: Path, *, yaml11_booleans: bool = False) -> YamlDocument:
    """Parse one YAML file; syntax errors, bad encodings and refused shapes (too deep, alias
    bombs) become a ConfigError with the line.

    Booleans are YAML 1.2's (true/false) unless ``yaml11_booleans`` (datasets, as eval-harness
    reads them). Merge keys (``<<: *base``) are applied. A key given twice in one mapping
    keeps its later value, as PyYAML (eval-harness) does; :func:`duplicate_keys` lists them.
    """
    loader_class = _DatasetLoader if yaml11_booleans else _Loader
    try:
        data = read_regular(path)  # a FIFO or a device is refused, never opened
    except FileNotFoundError:
        raise ConfigError.single(str(path), None, "", "file not found") from None
    except NotARegularFile as exc:
        raise ConfigError.single(str(path), None, "", str(exc).removeprefix(f"{path} ")) from None
    except OSError as exc:
        raise ConfigError.single(str(path), None, "", f"cannot read file: {exc.strerror or exc}") from None
    text = decode_utf8(data, path.name)
    try:
        node = yaml.compose(text, Loader=loader_class)
    except yaml.YAMLError as exc:
        line, problem = describe_yaml_error(exc, text)
        raise ConfigError.single(path.name, line, "", f"invalid YAML: {problem}") from None
    lines: dict[KeyPath, int] = {}
    try:
        parsed = _construct(node, (), lines, loader_class("")) if node is not None else None
    except yaml.YAMLError as exc:  # an unknown tag (!!python/object), a bad !!binary or timestamp, a bad merge
        line, problem = describe_yaml_error(exc, text)
        raise ConfigError.single(path.name, line, "", f"invalid YAML: {problem}") from None
    return YamlDocument(path=path, data=parsed, lines=lines)


def duplicate_keys(path: Path, *, yaml11_booleans: bool = False) -> list[DuplicateKey]:
    """Every key given twice in one mapping of ``path``, with both lines (a cheap pass over
    libyaml's events: the file is not composed). A file that cannot be read or parsed gives
    none here: :func:`load_yaml` reports it."""
    loader = (_DatasetLoader if yaml11_booleans else _Loader)("")
    try:
        events = yaml.parse(decode_utf8(read_regular(path), path.name),
                            Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        return _scan_duplicates(events, loader)
    except (OSError, NotARegularFile, ConfigError, yaml.YAMLError, ValueError):
        return []


def _scan_duplicates(events: Any, loader: yaml.SafeLoader) -> list[DuplicateKey]:
    found: list[DuplicateKey] = []
    # One frame per open collection: [path, is_mapping, expecting_key, key -> line, current key, index].
    stack: list[list[Any]] = []

    def done() -> None:  # a node ended: the next one is the mapping's other half, or the next item
        if stack:
            frame = stack[-1]
            if frame[1]:
                frame[2] = not frame[2]
            else:
                frame[5] += 1

    def child() -> KeyPath:
        frame = stack[-1]
        return (*frame[0], frame[4] if frame[1] else frame[5])

    for event in events:
        if isinstance(event, yaml.ScalarEvent):
            if stack and stack[-1][1] and stack[-1][2]:
                frame = stack[-1]
                # types-PyYAML leaves Resolver.resolve unannotated (third-party untyped).
                tag = event.tag if event.tag not in (None, "!") else loader.resolve(  # type: ignore[no-untyped-call]
                    yaml.ScalarNode, event.value, event.implicit)
                if tag == "tag:yaml.org,2002:merge":
                    frame[4] = "<<"
                else:
                    key = (event.value if tag == "tag:yaml.org,2002:str"  # most keys: no constructor call
                           else loader.construct_object(yaml.ScalarNode(tag, event.value), deep=True))
                    assert event.start_mark is not None  # the parser marks every event
                    line = event.start_mark.line + 1
                    name = key if isinstance(key, (str, int)) else str(key)
                    if key in frame[3]:
                        found.append(DuplicateKey((*frame[0], name), line, frame[3][key]))
                    frame[3][key] = line
                    frame[4] = name
            done()
        elif isinstance(event, yaml.AliasEvent):
            done()
        elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            at: KeyPath = child() if stack else ()
            stack.append([at, isinstance(event, yaml.MappingStartEvent), True, {}, None, 0])
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            stack.pop()
            done()
    return found


def _construct(node: yaml.Node, key_path: KeyPath, lines: dict[KeyPath, int], loader: yaml.SafeLoader) -> Any:
    lines.setdefault(key_path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        # `<<: *base` merge keys: PyYAML copies the merged pairs in front of the node's own
        # (which win); a key given explicitly is then not a duplicate of a merged one.
        explicit = len(node.value) - sum(1 for k, _ in node.value if k.tag == "tag:yaml.org,2002:merge")
        loader.flatten_mapping(node)
        first_explicit = len(node.value) - explicit
        out: dict[Any, Any] = {}
        own: dict[Any, int] = {}  # explicit key -> its line
        for index, (key_node, value_node) in enumerate(node.value):
            if not isinstance(key_node, yaml.ScalarNode):
                raise yaml.constructor.ConstructorError(
                    None, None, "a key must be a plain value (text or a number), not a mapping or a list",
                    key_node.start_mark)
            key = loader.construct_object(key_node, deep=True)
            child = (*key_path, key if isinstance(key, (str, int)) else str(key))
            line = key_node.start_mark.line + 1
            if index >= first_explicit:
                if key in own:
                    # The later value wins whole, as in PyYAML: no line of the earlier one is kept.
                    for stale in [k for k in lines if k[:len(child)] == child]:
                        del lines[stale]
                own[key] = line
            lines[child] = line
            out[key] = _construct(value_node, child, lines, loader)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_construct(item, (*key_path, i), lines, loader) for i, item in enumerate(node.value)]
    return loader.construct_object(node, deep=True)


def parse_yaml_value(text: str) -> Any:
    """One YAML value from a short text (a CLI option), read like an authored file:
    YAML 1.2 booleans and the same limits; raises ``yaml.YAMLError``."""
    loader = _Loader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
