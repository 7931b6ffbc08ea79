"""The public surface of the installed package, as plain data: the names ``affidavit``
exports, every ``affidavit`` command with its options, every HTTP route with its methods, and
every settings key. ``python tests/project/public_surface.py`` prints it as JSON; the pin in
``public_surface.json`` was printed from the tree before the package was restructured.

It imports the CLI's parser builder and the service's app factory by the names either layout
gives them, so the same function reads the tree before and after a move.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import sys
import typing
from typing import Any


def _parser() -> argparse.ArgumentParser:
    for module in ("affidavit.cli.main", "affidavit.cli"):
        try:
            build = getattr(importlib.import_module(module), "build_parser", None)
        except ImportError:
            continue
        if build is not None:
            parser: argparse.ArgumentParser = build()
            return parser
    raise LookupError("no build_parser in affidavit.cli.main or affidavit.cli")


def _commands(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    options = sorted(o for a in parser._actions for o in a.option_strings)
    found[prefix or "affidavit"] = options
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.update(_commands(sub, f"{prefix} {name}".strip()))
    return found


def _routes() -> list[str]:
    from affidavit import Settings
    from affidavit.service import create_app

    def no_store() -> Any:
        raise RuntimeError("the surface is read without a store")

    app = create_app(Settings(), no_store)
    try:  # FastAPI >= 0.16x nests included routers; older versions list them flat
        from fastapi.routing import iter_route_contexts
        routes = list(iter_route_contexts(app.routes))
    except ImportError:
        routes = list(app.routes)
    seen = set()
    for route in routes:
        path = getattr(route, "path", "")
        methods = sorted(getattr(route, "methods", None) or ["*"])
        seen.add(f"{','.join(methods)} {path}")
    return sorted(seen)


def _settings_keys(cls: type, prefix: str = "") -> list[str]:
    keys = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        if dataclasses.is_dataclass(hint) and isinstance(hint, type):
            keys.extend(_settings_keys(hint, f"{prefix}{f.name}."))
        else:
            keys.append(f"{prefix}{f.name}")
    return sorted(keys)


def public_surface() -> dict[str, Any]:
    import affidavit

    return {
        "exports": sorted(affidavit.__all__),
        "commands": _commands(_parser()),
        "routes": _routes(),
        "settings": _settings_keys(affidavit.Settings),
    }


if __name__ == "__main__":
    json.dump(public_surface(), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
