"""The committed OpenAPI document (``docs/openapi.json``) and how to regenerate it:
``affidavit serve --print-openapi > docs/openapi.json`` or
``python -m affidavit.service.openapi``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fastapi import FastAPI

COMMITTED = Path("docs") / "openapi.json"


def openapi_text(app: FastAPI) -> str:
    """The document as committed: sorted keys, two-space indent, a final newline."""
    return json.dumps(app.openapi(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def default_document() -> str:
    """The document of the service with default settings (what is committed)."""
    from affidavit.config.settings import Settings
    from affidavit.service.app import create_app

    def no_store() -> object:
        raise RuntimeError("the OpenAPI document needs no store")

    return openapi_text(create_app(Settings(), no_store))  # type: ignore[arg-type]


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else COMMITTED
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(default_document(), encoding="utf-8")
    print(f"wrote {target}")
