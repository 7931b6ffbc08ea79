"""Every surface that exists is registered in :mod:`affidavit.service.surfaces`,
and every registered
one exists: routes and console pages enumerated from the FastAPI app, commands from the
argparse parser, span names from the code, metric names from the metric set, log fields from
the JSON-lines formatter."""

from __future__ import annotations

import argparse
import ast
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from fastapi import APIRouter, FastAPI

from affidavit.cli.main import build_parser
from affidavit.config.settings import Settings
from affidavit.observability.logs import LOGGED_FIELDS
from affidavit.observability.metrics import SPECS
from affidavit.service import create_app
from affidavit.service.surfaces import (
    CONTENT,
    SURFACES,
    Audience,
    Kind,
    signal_names,
    unregistered,
)
from affidavit.store import Store

SRC = Path(__file__).resolve().parents[2] / "src" / "affidavit"
SPAN_CALLS = {"span", "stage", "traced", "start_as_current_span"}
ATTRIBUTE_KEY = re.compile(r"^(affidavit|gen_ai|http|error)\.[a-z_.]+$")


def _no_store() -> Store:
    raise AssertionError("the registry check never opens a store")


def _route_contexts(app: FastAPI) -> Iterator[object]:
    """Every route of the app, routers included (FastAPI >= 0.16x nests them)."""
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:  # older FastAPI: app.routes is already flat
        yield from app.routes
        return
    yield from iter_route_contexts(app.routes)


def app_surfaces(app: FastAPI) -> dict[Kind, set[str]]:
    """``METHOD /path`` of every route (HEAD, which GET implies, left out), by kind."""
    found: dict[Kind, set[str]] = {Kind.ROUTE: set(), Kind.PAGE: set()}
    for route in _route_contexts(app):
        path = getattr(route, "path", None)
        for method in sorted(getattr(route, "methods", None) or ()):
            if method != "HEAD" and path:
                kind = Kind.PAGE if path == "/ui" or path.startswith("/ui/") else Kind.ROUTE
                found[kind].add(f"{method} {path}")
    return found


def parser_commands(parser: argparse.ArgumentParser, prefix: str = "affidavit") -> set[str]:
    """Every leaf command of the parser: ``affidavit ledger show``."""
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        return {prefix}
    return {name for group in groups for command, sub in group.choices.items()
            for name in parser_commands(sub, f"{prefix} {command}")}


def missing_surfaces(app: FastAPI, parser: argparse.ArgumentParser) -> list[str]:
    """Routes, pages and commands that exist but are not registered."""
    present = {**app_surfaces(app), Kind.COMMAND: parser_commands(parser)}
    return [name for kind, names in present.items() for name in unregistered(kind, names)[0]]


def vanished_surfaces(app: FastAPI, parser: argparse.ArgumentParser) -> list[str]:
    """Registered routes, pages and commands that no longer exist."""
    present = {**app_surfaces(app), Kind.COMMAND: parser_commands(parser)}
    return [name for kind, names in present.items() for name in unregistered(kind, names)[1]]


def _name_pattern(node: ast.expr) -> str | None:
    """A span name argument as a pattern: an f-string's fields become ``*``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "*" for v in node.values)
    return None


def _calls(paths: Iterable[Path]) -> Iterator[ast.Call]:
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                yield node


def _called(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def spans_in_code() -> set[str]:
    """The name of every span the package opens (``stage``, ``traced``, the tracer)."""
    names = set()
    for call in _calls(SRC.rglob("*.py")):
        if _called(call) in SPAN_CALLS and call.args:
            pattern = _name_pattern(call.args[0])
            if pattern is not None:
                names.add(pattern)
    return names


def attribute_keys_in_code() -> set[str]:
    """Span, event and metric attribute keys written anywhere in the package."""
    keys = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict):
                keys |= {k.value for k in node.keys if isinstance(k, ast.Constant)
                         and isinstance(k.value, str) and ATTRIBUTE_KEY.match(k.value)}
    for call in _calls(SRC.rglob("*.py")):
        if _called(call) == "set_attribute" and call.args:
            pattern = _name_pattern(call.args[0])
            keys |= {pattern} if pattern else set()
    return keys - set(SPECS)


def log_fields_in_code() -> set[str]:
    """Every ``extra=`` field a log call of the package passes, and every field the
    formatter module itself writes into a line."""
    fields = set()
    for call in _calls(SRC.rglob("*.py")):
        for keyword in call.keywords:
            if keyword.arg == "extra" and isinstance(keyword.value, ast.Dict):
                fields |= {k.value for k in keyword.value.keys if isinstance(k, ast.Constant)}
    formatter = ast.parse((SRC / "observability" / "logs.py").read_text(encoding="utf-8"))
    fields |= {k.value for node in ast.walk(formatter) if isinstance(node, ast.Dict)
               for k in node.keys if isinstance(k, ast.Constant) and k.value in LOGGED_FIELDS}
    return fields


# --------------------------------------------------------------------------- tests


def test_every_route_page_and_command_is_registered() -> None:
    app = create_app(Settings(), _no_store)
    assert missing_surfaces(app, build_parser()) == []


def test_every_registered_route_page_and_command_exists() -> None:
    app = create_app(Settings(), _no_store)
    assert vanished_surfaces(app, build_parser()) == []


def test_a_route_added_without_registering_it_is_reported() -> None:
    router = APIRouter()

    @router.get("/v1/documents/{doc_id}/unregistered")
    async def unregistered_route(doc_id: str) -> dict[str, str]:
        return {"doc_id": doc_id}

    @router.post("/ui/unregistered")
    async def unregistered_page() -> dict[str, str]:
        return {}

    before = missing_surfaces(create_app(Settings(), _no_store), build_parser())
    app = create_app(Settings(), _no_store, routers=[router])
    found = missing_surfaces(app, build_parser())
    assert [name for name in found if name not in before] == [
        "GET /v1/documents/{doc_id}/unregistered", "POST /ui/unregistered"]


def test_a_command_added_without_registering_it_is_reported() -> None:
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    added = commands.add_parser("export")
    added.add_subparsers().add_parser("titles")
    app = create_app(Settings(), _no_store)
    before = missing_surfaces(app, build_parser())
    assert [name for name in missing_surfaces(app, parser) if name not in before] == [
        "affidavit export titles"]


def test_registered_span_names_are_the_ones_the_code_opens() -> None:
    assert spans_in_code() == signal_names("span")


def test_registered_metric_names_are_the_metric_set() -> None:
    assert set(SPECS) == signal_names("metric")


def test_registered_log_fields_are_the_fields_the_code_logs() -> None:
    assert log_fields_in_code() == signal_names("log")
    assert signal_names("log") <= set(LOGGED_FIELDS), "the formatter would drop them"


def test_every_attribute_the_code_sets_is_declared_by_a_registered_signal() -> None:
    declared = {e.field for s in SURFACES if s.kind == Kind.SIGNAL for e in s.emits}
    assert attribute_keys_in_code() - declared == set()


def test_signals_and_anonymous_surfaces_declare_no_content() -> None:
    """Telemetry leaves the permission model, and anyone may call an anonymous surface:
    neither may declare a string that carries document content."""
    carrying = [s.name for s in SURFACES if s.audience in (Audience.EXPORTER, Audience.ANYONE)
                and any(e.source in CONTENT for e in s.emits)]
    assert carrying == []


def test_surface_names_are_unique() -> None:
    names = [s.name for s in SURFACES]
    assert len(names) == len(set(names))
