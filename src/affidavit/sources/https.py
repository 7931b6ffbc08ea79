"""Stage A transport over HTTPS: a manifest of documents, or one document URL.

A URL whose file name is ``manifest.json`` or ends in ``.manifest.json`` is read as a
manifest (format in :mod:`~affidavit.sources.manifest`); any other URL is one document
whose source id is the URL's path.

Untrusted-input rules:

* TLS is always verified (``[https] ca_bundle`` names a private CA); only ``https`` URLs
  are fetched, also after a redirect;
* redirects are followed by this module, at most ``max_redirects``, and every hop's host
  is resolved here and vetted by :mod:`~affidavit.sources.netguard` before any
  connection; the connection then goes to the vetted address (while the TLS server name
  and ``Host`` stay the original name), so DNS cannot answer differently in between;
* bodies are streamed and abandoned past ``max_document_bytes`` (``TOO_LARGE``);
* connection errors, timeouts, 429 and 5xx are retried with backoff, then the document is
  quarantined (``FETCH_FAILED``); a manifest that cannot be read fails the listing.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType

import httpx

from affidavit.config.settings import HttpsSettings
from affidavit.errors import ConfigurationError, InputRejected
from affidavit.records import SourceDocument
from affidavit.sources.manifest import parse_manifest, single_document_entry
from affidavit.sources.netguard import (
    SSRF_REFUSED,
    AddressPolicy,
    IPAddress,
    Resolver,
    parse_ip_literal,
    system_resolver,
    vet_host,
)
from affidavit.sources.remote import RemoteEntry, RetryPolicy, TransientFailure, in_listing_order

MANIFEST_UNAVAILABLE = "MANIFEST_UNAVAILABLE"
MALFORMED_URL = "MALFORMED_URL"
TOO_MANY_REDIRECTS = "TOO_MANY_REDIRECTS"
HTTP_STATUS = "HTTP_STATUS"
TLS_FAILED = "TLS_FAILED"
TOO_LARGE = "TOO_LARGE"

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_OK_STATUSES = frozenset({200, 203})


def is_manifest_url(url: str) -> bool:
    """Whether ``url`` names a manifest by its file name."""
    name = httpx.URL(url).path.rsplit("/", 1)[-1].lower()
    return name == "manifest.json" or name.endswith(".manifest.json")


class HttpsFetcher:
    """GETs documents over verified TLS; every redirect hop is vetted before connecting."""

    def __init__(self, settings: HttpsSettings, *, resolve: Resolver = system_resolver) -> None:
        self.settings = settings
        self._policy = AddressPolicy.from_entries(settings.allow_networks)
        self._resolve = resolve
        self._verify = _tls_verification(settings.ca_bundle)
        # One pool per host name: a pooled connection was verified for the name that
        # opened it, so it must never carry a request for another name on the same address.
        self._transports: dict[str, httpx.HTTPTransport] = {}

    def __enter__(self) -> HttpsFetcher:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close every pooled connection."""
        for transport in self._transports.values():
            transport.close()
        self._transports.clear()

    def fetch(self, url: str, *, limit: int) -> bytes:
        """The body of ``url`` after redirects: at most ``limit`` bytes.

        Raises ``InputRejected`` for a permanent refusal and ``TransientFailure`` for a
        failure worth another attempt.
        """
        current = _parse_url(url)
        for _hop in range(self.settings.max_redirects + 1):
            try:
                following, body = self._hop(current, limit)
            except (httpx.TransportError, OSError) as exc:
                raise TransientFailure(f"{current.host}: {_describe(exc)}") from exc
            except httpx.HTTPError as exc:  # a body that cannot be decoded, for example
                raise InputRejected(HTTP_STATUS, f"{_shown(current)}: {_describe(exc)}") from exc
            except httpx.InvalidURL as exc:
                raise InputRejected(MALFORMED_URL, f"{_shown(current)}: {exc}") from exc
            if following is None:
                return body
            current = following
        raise InputRejected(
            TOO_MANY_REDIRECTS, f"{_shown(url)}: more than {self.settings.max_redirects} redirects"
        )

    def _hop(self, url: httpx.URL, limit: int) -> tuple[httpx.URL | None, bytes]:
        """One request: ``(next URL, b"")`` for a redirect, ``(None, body)`` otherwise."""
        if url.scheme != "https":
            raise InputRejected(SSRF_REFUSED, f"{url.scheme}: URL refused; only https is fetched")
        host = _ascii_host(url)
        addresses = vet_host(host, url.port or 443, self._policy, resolve=self._resolve)
        failure: Exception = OSError(f"{host}: no address to connect to")
        for address in addresses:
            try:
                return self._request(url, address, limit)
            except httpx.ConnectError as exc:
                if _is_tls_failure(exc):
                    raise InputRejected(TLS_FAILED, f"{host}: {_describe(exc)}") from exc
                failure = exc  # this address refused: the next one may answer
        raise failure

    def _request(
        self, url: httpx.URL, address: IPAddress, limit: int
    ) -> tuple[httpx.URL | None, bytes]:
        host = _ascii_host(url)
        literal = parse_ip_literal(host)
        server_name = host if literal is None else str(literal)
        request = httpx.Request(
            "GET",
            url.copy_with(host=str(address)),
            headers={
                "Host": url.netloc.decode("ascii"),
                "User-Agent": self.settings.user_agent,
                "Accept-Encoding": "identity",
            },
            extensions={
                "sni_hostname": server_name,
                "timeout": httpx.Timeout(self.settings.timeout_seconds).as_dict(),
            },
        )
        # The transport, not a Client: a Client would interpret redirects itself.
        response = self._transport(server_name).handle_request(request)
        try:
            status = response.status_code
            if status in _REDIRECT_STATUSES:
                return _redirect_target(url, response.headers.get("location")), b""
            if status == 429 or status >= 500:
                raise TransientFailure(f"{url.host}: HTTP {status}")
            if status not in _OK_STATUSES:
                raise InputRejected(HTTP_STATUS, f"{_shown(url)}: HTTP {status}")
            return None, _read_capped(response, limit, url)
        finally:
            response.close()

    def _transport(self, server_name: str) -> httpx.HTTPTransport:
        transport = self._transports.get(server_name)
        if transport is None:
            transport = httpx.HTTPTransport(verify=self._verify, trust_env=False)
            self._transports[server_name] = transport
        return transport


class HttpsSource:
    """Documents listed by an HTTPS manifest, or one document URL."""

    def __init__(
        self,
        url: str,
        *,
        settings: HttpsSettings,
        max_document_bytes: int,
        source_system: str = "files",
        manifest: bool | None = None,
        fetch_attempts: int = 3,
        fetch_backoff_seconds: float = 0.5,
        resolve: Resolver = system_resolver,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        parsed = _parse_url(url)
        if parsed.scheme != "https":
            raise InputRejected("UNSUPPORTED_SCHEME", f"{parsed.scheme}: only https is fetched")
        self.url = str(parsed)
        self.source_system = source_system
        self.settings = settings
        self.max_document_bytes = max_document_bytes
        self.is_manifest = is_manifest_url(self.url) if manifest is None else manifest
        self.retry = RetryPolicy(fetch_attempts, fetch_backoff_seconds, sleep)
        self._resolve = resolve

    def list_documents(self) -> Iterator[SourceDocument]:
        """The manifest's documents in ``source_id`` order, or the one document."""
        with HttpsFetcher(self.settings, resolve=self._resolve) as fetcher:
            if not self.is_manifest:
                yield self._document(fetcher, single_document_entry(self.url))
                return
            manifest_url = httpx.URL(self.url)
            for entry in in_listing_order(parse_manifest(self._manifest(fetcher), manifest_url)):
                yield self._document(fetcher, entry)

    def _manifest(self, fetcher: HttpsFetcher) -> bytes:
        try:
            return self._fetch(fetcher, self.url, "manifest")
        except InputRejected as exc:
            if exc.reason_code == SSRF_REFUSED:
                raise
            raise InputRejected(MANIFEST_UNAVAILABLE, f"{_shown(self.url)}: {exc}") from exc

    def _document(self, fetcher: HttpsFetcher, entry: RemoteEntry) -> SourceDocument:
        if entry.rejection is not None:
            return entry.document(self.source_system)
        try:
            content = self._fetch(fetcher, entry.location, entry.alias)
        except InputRejected as exc:
            return entry.document(self.source_system, rejection=(exc.reason_code, exc.detail))
        return entry.document(self.source_system, content)

    def _fetch(self, fetcher: HttpsFetcher, url: str, what: str) -> bytes:
        return self.retry.run(lambda: fetcher.fetch(url, limit=self.max_document_bytes),
                              what=what)


# --------------------------------------------------------------------------- HTTP details


def _parse_url(url: str) -> httpx.URL:
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise InputRejected(MALFORMED_URL, f"{url[:200]!r}: {exc}") from exc
    if not parsed.host:
        raise InputRejected(MALFORMED_URL, f"{url[:200]!r}: no host")
    return parsed


def _ascii_host(url: httpx.URL) -> str:
    """The host as it goes on the wire: IDNA names in their ASCII form."""
    return url.raw_host.decode("ascii")


def _redirect_target(url: httpx.URL, location: str | None) -> httpx.URL:
    if not location:
        raise InputRejected(HTTP_STATUS, f"{_shown(url)}: redirect without a Location")
    try:
        target = url.join(location)
    except httpx.InvalidURL as exc:
        # Refused rather than read leniently: a lenient reading is how guards are evaded.
        raise InputRejected(SSRF_REFUSED, f"redirect to an unreadable URL: {exc}") from exc
    if not target.host and target.scheme == "https":
        raise InputRejected(SSRF_REFUSED, "redirect to a URL without a host")
    return target


def _read_capped(response: httpx.Response, limit: int, url: httpx.URL) -> bytes:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise InputRejected(TOO_LARGE, f"{_shown(url)}: {declared} bytes exceeds {limit}")
    body = bytearray()
    for piece in response.iter_bytes():
        body += piece
        if len(body) > limit:
            raise InputRejected(TOO_LARGE, f"{_shown(url)}: more than {limit} bytes")
    return bytes(body)


def _tls_verification(ca_bundle: str) -> ssl.SSLContext | bool:
    if not ca_bundle:
        return True
    path = Path(ca_bundle).expanduser()
    try:
        return ssl.create_default_context(cafile=str(path))
    except (OSError, ssl.SSLError) as exc:
        raise ConfigurationError(f"cannot load the CA bundle {path}: {exc}",
                                 key="https.ca_bundle") from exc


def _is_tls_failure(exc: BaseException) -> bool:
    """A certificate or handshake refusal: another attempt would fail the same way.

    A connection dropped mid-handshake is not one of them: that is worth another try.
    """
    seen: BaseException | None = exc
    for _depth in range(16):  # exception chains are short; the bound stops a cycle
        if seen is None:
            break
        if isinstance(seen, ssl.SSLError):
            return not isinstance(seen, ssl.SSLEOFError | ssl.SSLZeroReturnError
                                  | ssl.SSLSyscallError)
        seen = seen.__cause__ or seen.__context__
    return False


def _describe(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _shown(url: httpx.URL | str) -> str:
    """A URL for messages: without credentials, query or fragment."""
    parsed = httpx.URL(url) if isinstance(url, str) else url
    return str(parsed.copy_with(userinfo=b"", query=None, fragment=None))
