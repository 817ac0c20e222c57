"""Reading a promptfoo config and the files it names (``file://``), with lines for the report."""

from __future__ import annotations

import csv
import glob
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalh_pipeline.config.errors import ConfigError
from evalh_pipeline.config.yaml_source import KeyPath, YamlDocument, format_key_path, load_yaml
from evalh_pipeline.importers.report import BadSource, ImportReport, Severity


@dataclass
class Located:
    """A value and where it came from (file and key path into it, or a line)."""

    value: Any
    file: str
    where: str
    line: int | None


@dataclass
class Source:
    """The config being imported: its document, its folder, and the report findings go to."""

    doc: YamlDocument
    report: ImportReport
    files: dict[str, YamlDocument] = field(default_factory=dict)
    prompt_count: int = 0  # promptfoo's prompts met so far, mapped or not (their indices)
    copies: dict[str, Path] = field(default_factory=dict)  # files written beside eval.yaml: name -> source

    @property
    def folder(self) -> Path:
        return self.doc.path.parent

    @property
    def name(self) -> str:
        return self.doc.path.name

    def line(self, key_path: KeyPath, doc: YamlDocument | None = None) -> int | None:
        return (doc or self.doc).line_of(key_path)

    def at(self, key_path: KeyPath, doc: YamlDocument | None = None) -> tuple[str, str, int | None]:
        """(file, key path text, line) of ``key_path`` in ``doc`` (default: the config)."""
        doc = doc or self.doc
        return doc.path.name if doc is self.doc else self.relative(doc.path), format_key_path(key_path), doc.line_of(key_path)

    def relative(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.folder))
        except ValueError:
            return str(path)

    def note(self, place: tuple[str, str, int | None], what: str, instead: str, severity: Severity = "error") -> None:
        file, where, line = place
        self.report.add(file, line, where, what, instead, severity)

    def resolve(self, ref: str, place: tuple[str, str, int | None], *, many: bool = False) -> list[Path]:
        """The files a ``file://`` reference names (a glob when ``many``); missing is bad input."""
        target = ref.removeprefix("file://")
        pattern = target if Path(target).is_absolute() else str(self.folder / target)
        paths = sorted(Path(p) for p in glob.glob(pattern)) if many and any(c in target for c in "*?[") else [Path(pattern)]
        missing = [p for p in paths if not p.is_file()]
        if missing or not paths:
            file, where, line = place
            raise BadSource(file, line, where, f"{ref} does not exist ({self.relative(missing[0]) if missing else 'no match'})")
        return paths

    def read_text(self, path: Path) -> str:
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise BadSource(self.relative(path), None, "", f"cannot read: {exc}") from None

    def load_yaml(self, path: Path) -> YamlDocument:
        if str(path) not in self.files:
            try:
                # promptfoo reads YAML with js-yaml: YAML 1.2 booleans (true/false), as evalh's loader
                self.files[str(path)] = load_yaml(path)
            except ConfigError as exc:
                raise BadSource.of(exc.issues[0]) from None
        return self.files[str(path)]


def read_rows(source: Source, path: Path) -> list[Located]:
    """The rows of a tests file: ``.csv`` (a header of var names), ``.jsonl``, ``.json``,
    ``.yaml``/``.yml`` (a list), each with the line it starts on."""
    name = source.relative(path)
    suffix = path.suffix.lower()
    if suffix == ".csv":
        text = source.read_text(path)
        reader = csv.DictReader(io.StringIO(text))
        rows = []
        for row in reader:
            rows.append(Located(dict(row), name, f"row {reader.line_num - 1}", reader.line_num))
        return rows
    if suffix == ".jsonl":
        rows = []
        for number, line in enumerate(source.read_text(path).splitlines(), 1):
            if line.strip():
                try:
                    rows.append(Located(json.loads(line), name, f"line {number}", number))
                except json.JSONDecodeError as exc:
                    raise BadSource(name, number, "", f"invalid JSON: {exc.msg}") from None
        return rows
    if suffix == ".json":
        try:
            data = json.loads(source.read_text(path))
        except json.JSONDecodeError as exc:
            raise BadSource(name, exc.lineno, "", f"invalid JSON: {exc.msg}") from None
        data = data if isinstance(data, list) else [data]
        return [Located(item, name, f"[{i}]", None) for i, item in enumerate(data)]
    if suffix in (".yaml", ".yml"):
        doc = source.load_yaml(path)
        data = doc.data if isinstance(doc.data, list) else [doc.data]
        return [Located(item, name, f"[{i}]", doc.line_of((i,))) for i, item in enumerate(data)]
    raise BadSource(name, None, "", f"tests file of an unsupported kind {suffix!r} (csv, json, jsonl, yaml)")
