"""Which transport reads a location: a local path, an ``https://`` URL or an ``sftp://`` URL."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

from affidavit.config.settings import Settings
from affidavit.errors import InputRejected
from affidavit.sources.base import Transport
from affidavit.sources.local import LocalFolderSource

UNSUPPORTED_SCHEME = "UNSUPPORTED_SCHEME"

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


def location_scheme(location: str) -> str | None:
    """The URL scheme of ``location`` in lower case, or None for a local path."""
    match = _SCHEME.match(location)
    return match.group(1).lower() if match else None


def source_for(location: str, settings: Settings, *, source_system: str = "files") -> Transport:
    """The transport for ``location``; any scheme but https and sftp (file:// included)
    is refused with ``UNSUPPORTED_SCHEME``."""
    scheme = location_scheme(location)
    ingest = settings.ingest
    if scheme is None:
        return LocalFolderSource(location, source_system=source_system,
                                 max_document_bytes=ingest.max_document_bytes,
                                 follow_symlinks=ingest.follow_symlinks)
    if scheme == "https":
        from affidavit.sources.https import HttpsSource

        return HttpsSource(location, settings=settings.https, source_system=source_system,
                           max_document_bytes=ingest.max_document_bytes,
                           fetch_attempts=ingest.fetch_attempts,
                           fetch_backoff_seconds=ingest.fetch_backoff_seconds)
    if scheme == "sftp":
        from affidavit.sources.sftp import SftpSource

        return SftpSource(location, settings=settings.sftp, source_system=source_system,
                          max_document_bytes=ingest.max_document_bytes,
                          fetch_attempts=ingest.fetch_attempts,
                          fetch_backoff_seconds=ingest.fetch_backoff_seconds)
    raise InputRejected(UNSUPPORTED_SCHEME,
                        f"{scheme}:// is not a source; give a path, an https:// or sftp:// URL")


def listing_key(location: str) -> str | None:
    """The name under which a full listing of ``location`` is remembered, so that what
    disappears from it is withdrawn; None for a single local file."""
    scheme = location_scheme(location)
    if scheme is None:
        path = Path(location)
        return None if path.is_file() else f"local:{path.resolve()}"
    parts = urlsplit(location)
    # Credentials, query and fragment are not part of the name: they would be stored.
    host = parts.netloc.rsplit("@", 1)[-1].lower()
    return f"{scheme}:{host}{parts.path or '/'}"
