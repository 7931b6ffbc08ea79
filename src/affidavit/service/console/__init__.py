"""The web console under ``/ui``: server-rendered pages for readers, reviewers, auditors and
administrators, over the same engine views as the HTTP API.

Pages are Jinja2 templates (``templates/``) with one small script and one stylesheet of our
own (``static/``), served from this package: no external host, no build step. Everything but
the streamed draft works without JavaScript.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from starlette.responses import Response

from affidavit.errors import NotFound
from affidavit.service.console import audit_pages, history, listing, pages, upload
from affidavit.service.console.render import SECURITY_HEADERS

STATIC = Path(__file__).parent / "static"
_MEDIA_TYPES = {"console.css": "text/css; charset=utf-8",
                "console.js": "text/javascript; charset=utf-8"}

static_router = APIRouter(prefix="/ui/static", include_in_schema=False)


@static_router.get("/{name}")
async def static_file(name: str) -> Response:
    """One of the console's own files; the names are fixed, so no path reaches the disk."""
    media_type = _MEDIA_TYPES.get(name)
    if media_type is None:
        raise NotFound(f"no static file {name}")
    headers = {**SECURITY_HEADERS, "Cache-Control": "public, max-age=300"}
    return Response((STATIC / name).read_bytes(), media_type=media_type, headers=headers)


router = APIRouter()
router.include_router(pages.router)
router.include_router(history.router)
router.include_router(listing.router)
router.include_router(upload.router)
router.include_router(audit_pages.router)
router.include_router(static_router)

__all__ = ["router"]
