"""The HTTPS transport against a real TLS server on 127.0.0.1 (certificate from trustme)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from sources_servers import ConnectionTrap, Route

from affidavit.config.settings import HttpsSettings
from affidavit.errors import ConfigurationError, InputRejected
from affidavit.records import SourceDocument
from affidavit.sources import HttpsSource, parse_manifest
from affidavit.util.retry import JITTER

LIMIT = 4096
BACKOFF = 0.25


def jittered(sleeps: list[float], bases: list[float]) -> bool:
    """Each pause is its exponential backoff plus at most JITTER of it (affidavit.util.retry)."""
    return len(sleeps) == len(bases) and all(
        b <= s <= b * (1 + JITTER) for s, b in zip(sleeps, bases, strict=True))


def listing(url: str, settings: HttpsSettings, **options) -> list[SourceDocument]:
    options.setdefault("max_document_bytes", LIMIT)
    options.setdefault("fetch_backoff_seconds", BACKOFF)
    options.setdefault("sleep", lambda seconds: None)
    return list(HttpsSource(url, settings=settings, **options).list_documents())


def only(documents: list[SourceDocument]) -> SourceDocument:
    assert len(documents) == 1
    return documents[0]


def write(root: Path, name: str, text: str) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def serve_manifest(root: Path, documents: list[dict[str, object]]) -> None:
    write(root, "docs/manifest.json", json.dumps({"documents": documents}))


# --------------------------------------------------------------------------- manifests


def test_manifest_lists_documents_in_source_id_order(https_server, https_settings, https_root):
    write(https_root, "docs/b.md", "# B\n\nBee.\n")
    write(https_root, "docs/sub/a.txt", "ay")
    serve_manifest(https_root, [
        {"url": "b.md", "rev": "r2", "title": "Bee", "acl": ["group:staff#member"],
         "classification": "confidential", "oracle_id": "ORC-1", "frameworks": ["SOX"]},
        {"url": https_server.url("docs/sub/a.txt")},
    ])
    documents = listing(https_server.url("docs/manifest.json"), https_settings)
    assert [d.source_id for d in documents] == ["b.md", "sub/a.txt"]
    assert [d.alias for d in documents] == ["b.md", "sub/a.txt"]
    bee, ay = documents
    assert bee.content == b"# B\n\nBee.\n" and bee.source_rev == "r2"
    assert bee.metadata.title == "Bee" and bee.metadata.acl == ("group:staff#member",)
    assert bee.metadata.classification == "CONFIDENTIAL"
    assert bee.metadata.oracle_id == "ORC-1" and bee.metadata.frameworks == ("SOX",)
    assert ay.source_rev == hashlib.sha256(b"ay").hexdigest()  # no rev: the bytes' digest
    assert all(d.rejection is None and d.source_system == "files" for d in documents)


def test_manifest_source_id_is_a_default_that_front_matter_may_override(
        https_server, https_settings, https_root):
    write(https_root, "docs/x.md", "x")
    serve_manifest(https_root, [{"url": "x.md", "source_id": "POLICY-9"}])
    document = only(listing(https_server.url("docs/manifest.json"), https_settings,
                            source_system="intranet"))
    assert (document.source_system, document.source_id, document.alias) == (
        "intranet", "POLICY-9", "x.md")
    assert document.metadata.source_id is None


def test_broken_manifest_entries_are_quarantined_and_the_rest_continue(
        https_server, https_settings, https_root):
    write(https_root, "docs/ok.md", "fine")
    serve_manifest(https_root, [
        "not an object",
        {"title": "no url"},
        {"url": "bad-acl.md", "acl": ["everyone!"]},
        {"url": "ok.md"},
        {"url": "twin-1.md", "source_id": "twin"},
        {"url": "twin-2.md", "source_id": "twin"},
        {"url": "missing.md"},
    ])
    documents = listing(https_server.url("docs/manifest.json"), https_settings)
    codes = {d.alias: d.rejection and d.rejection[0] for d in documents}
    assert codes == {
        "manifest entry 0": "MALFORMED_MANIFEST",
        "manifest entry 1": "MALFORMED_MANIFEST",
        "bad-acl.md": "MALFORMED_METADATA",
        "ok.md": None,
        "twin-1.md": "DUPLICATE_SOURCE_ID",
        "twin-2.md": "DUPLICATE_SOURCE_ID",
        "missing.md": "HTTP_STATUS",
    }
    assert all(d.content == b"" for d in documents if d.rejection)


@pytest.mark.parametrize("body", [b"{", b"[]", b'{"documents": {}}', b'{"documents": [NaN]}',
                                  b'{"documents": [], "documents": []}'])
def test_a_malformed_manifest_fails_the_listing(body):
    with pytest.raises(InputRejected) as caught:
        parse_manifest(body, httpx.URL("https://example.org/manifest.json"))
    assert caught.value.reason_code == "MALFORMED_MANIFEST"


def test_an_unreachable_manifest_fails_the_listing_after_retries(https_server, https_settings):
    https_server.routes["/down.manifest.json"] = Route(failures=99)
    sleeps: list[float] = []
    with pytest.raises(InputRejected) as caught:
        listing(https_server.url("down.manifest.json"), https_settings, sleep=sleeps.append)
    assert caught.value.reason_code == "MANIFEST_UNAVAILABLE"
    assert https_server.hits["/down.manifest.json"] == 3
    assert jittered(sleeps, [BACKOFF, 2 * BACKOFF])


def test_a_manifest_on_a_refused_address_fails_with_ssrf_refused(https_server, https_settings):
    settings = replace(https_settings, allow_networks=())
    with pytest.raises(InputRejected) as caught:
        listing(https_server.url("manifest.json"), settings)
    assert caught.value.reason_code == "SSRF_REFUSED"
    assert https_server.hits == {}


# --------------------------------------------------------------------------- one document


def test_a_document_url_is_one_document_identified_by_its_path(
        https_server, https_settings, https_root):
    write(https_root, "handbook/leave policy.md", "# Leave\n")
    document = only(listing(https_server.url("handbook/leave%20policy.md?x=1"), https_settings))
    assert (document.source_id, document.alias) == ("handbook/leave policy.md",) * 2
    assert document.content == b"# Leave\n" and document.rejection is None


def test_redirects_within_allowed_hosts_are_followed(https_server, https_settings, https_root):
    write(https_root, "new/place.md", "moved")
    https_server.routes["/old.md"] = Route(302, {"Location": "/hop.md"})
    https_server.routes["/hop.md"] = Route(308, {"Location": https_server.url("new/place.md")})
    document = only(listing(https_server.url("old.md"), https_settings))
    assert document.content == b"moved" and document.source_id == "old.md"


def test_redirect_chains_longer_than_the_limit_are_refused(https_server, https_settings):
    for index in range(5):
        https_server.routes[f"/r{index}.md"] = Route(301, {"Location": f"/r{index + 1}.md"})
    https_server.routes["/loop.md"] = Route(302, {"Location": "/loop.md"})
    for start in ("r0.md", "loop.md"):
        document = only(listing(https_server.url(start), https_settings))
        assert document.rejection and document.rejection[0] == "TOO_MANY_REDIRECTS"
    assert "/r4.md" not in https_server.hits  # max_redirects = 3: the 4th hop is never asked


def test_tls_is_verified_by_default(https_server, https_settings, https_root):
    write(https_root, "a.md", "a")
    sleeps: list[float] = []
    document = only(listing(https_server.url("a.md"), replace(https_settings, ca_bundle=""),
                            sleep=sleeps.append))
    assert document.rejection and document.rejection[0] == "TLS_FAILED"
    assert sleeps == [] and https_server.hits == {}  # not retried; no request was sent


def test_the_certificate_is_checked_against_the_requested_name_not_the_pinned_address(
        https_server, https_settings, https_root):
    write(https_root, "a.md", "a")
    settings = replace(https_settings, allow_networks=("intranet.test",))
    document = only(listing(f"https://intranet.test:{https_server.port}/a.md", settings,
                            resolve=lambda host, port: ["127.0.0.1"]))
    assert document.rejection and document.rejection[0] == "TLS_FAILED"


def test_a_missing_ca_bundle_is_a_configuration_error(https_server, https_settings, tmp_path):
    settings = replace(https_settings, ca_bundle=str(tmp_path / "absent.pem"))
    with pytest.raises(ConfigurationError, match=r"https\.ca_bundle"):
        listing(https_server.url("a.md"), settings)


# --------------------------------------------------------------------------- limits, retries


def test_a_body_over_the_cap_is_refused(https_server, https_settings, https_root):
    write(https_root, "big.md", "x" * (LIMIT + 1))
    write(https_root, "exact.md", "x" * LIMIT)
    assert only(listing(https_server.url("big.md"), https_settings)).rejection[0] == "TOO_LARGE"
    assert only(listing(https_server.url("exact.md"), https_settings)).rejection is None


def test_the_cap_is_enforced_while_streaming_without_a_length(https_server, https_settings):
    chunk = b"y" * 1000
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(50)) + b"0\r\n\r\n"
    https_server.routes["/stream.md"] = Route(200, {"Transfer-Encoding": "chunked"}, body)
    document = only(listing(https_server.url("stream.md"), https_settings))
    assert document.rejection and document.rejection[0] == "TOO_LARGE"
    assert document.content == b""


def test_transient_failures_are_retried_with_backoff(https_server, https_settings):
    https_server.routes["/flaky.md"] = Route(200, {}, b"# Flaky\n", failures=2)
    sleeps: list[float] = []
    document = only(listing(https_server.url("flaky.md"), https_settings, sleep=sleeps.append))
    assert document.content == b"# Flaky\n" and document.rejection is None
    assert https_server.hits["/flaky.md"] == 3 and jittered(sleeps, [BACKOFF, 2 * BACKOFF])


def test_persistent_failures_are_quarantined_after_the_configured_attempts(
        https_server, https_settings):
    https_server.routes["/down.md"] = Route(failures=99)
    sleeps: list[float] = []
    document = only(listing(https_server.url("down.md"), https_settings, sleep=sleeps.append,
                            fetch_attempts=2))
    assert document.rejection and document.rejection[0] == "FETCH_FAILED"
    assert "2 attempts" in document.rejection[1]
    assert https_server.hits["/down.md"] == 2 and jittered(sleeps, [BACKOFF])


def test_a_refused_connection_is_retried_then_quarantined(https_settings, trap):
    port = trap.port
    trap.__exit__()  # nothing listens on the port any more: connections are refused
    sleeps: list[float] = []
    document = only(listing(f"https://localhost:{port}/a.md", https_settings,
                            sleep=sleeps.append))
    assert document.rejection and document.rejection[0] == "FETCH_FAILED"
    assert jittered(sleeps, [BACKOFF, 2 * BACKOFF])


def test_client_errors_are_not_retried(https_server, https_settings):
    sleeps: list[float] = []
    document = only(listing(https_server.url("nothing-here.md"), https_settings,
                            sleep=sleeps.append))
    assert document.rejection and document.rejection[0] == "HTTP_STATUS"
    assert https_server.hits["/nothing-here.md"] == 1 and sleeps == []


# --------------------------------------------------------------------------- SSRF


def test_loopback_is_refused_unless_allow_listed(https_server, https_settings, https_root):
    write(https_root, "a.md", "a")
    for url in (https_server.url("a.md"), https_server.url("a.md", host="127.0.0.1")):
        document = only(listing(url, replace(https_settings, allow_networks=())))
        assert document.rejection and document.rejection[0] == "SSRF_REFUSED"
    assert https_server.hits == {}
    allowed = replace(https_settings, allow_networks=("127.0.0.1/32",))
    document = only(listing(https_server.url("a.md", host="127.0.0.1"), allowed))
    assert document.content == b"a"


def redirect_targets(trap_port: int) -> list[str]:
    """Places a hostile redirect may point at; loopback forms aim at the trap listener."""
    loopback_forms = ["2130706433", "0x7f000001", "0177.0.0.1", "127.1", "127.0.0.1",
                      "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::127.0.0.1]", "0.0.0.0",
                      "0"]
    return [
        *(f"https://{host}:{trap_port}/" for host in loopback_forms),
        *(f"http://{host}:{trap_port}/" for host in loopback_forms),
        "http://2130706433/", "http://0x7f000001/", "http://[::ffff:127.0.0.1]/",
        f"https://10.0.0.8:{trap_port}/", f"https://192.168.1.1:{trap_port}/",
        f"https://172.16.5.5:{trap_port}/", f"https://169.254.169.254:{trap_port}/latest/",
        "http://169.254.169.254/latest/meta-data/", f"https://[fd00:ec2::254]:{trap_port}/",
        f"https://[fe80::1]:{trap_port}/", f"https://100.64.0.1:{trap_port}/",
        "file:///etc/passwd", "ftp://example.org/x", "gopher://127.0.0.1:70/",
    ]


@pytest.mark.parametrize("status", [301, 302, 307])
def test_redirects_to_refused_addresses_never_connect(
        https_server, https_settings, trap: ConnectionTrap, status):
    targets = redirect_targets(trap.port)
    for index, target in enumerate(targets):
        https_server.routes[f"/go{index}.md"] = Route(status, {"Location": target})
    sleeps: list[float] = []
    for index, target in enumerate(targets):
        document = only(listing(https_server.url(f"go{index}.md"), https_settings,
                                sleep=sleeps.append))
        assert document.rejection, target
        assert document.rejection[0] == "SSRF_REFUSED", (target, document.rejection)
    assert trap.connections == 0
    assert sleeps == []  # a refusal is final, never retried


def test_a_name_resolving_to_a_refused_address_is_refused(https_settings):
    answers = {"metadata.test": ["169.254.169.254"], "mixed.test": ["8.8.8.8", "10.0.0.1"]}
    for host in answers:
        document = only(listing(f"https://{host}/a.md", https_settings,
                                resolve=lambda name, port: answers[name]))
        assert document.rejection and document.rejection[0] == "SSRF_REFUSED"


def test_an_allow_listed_name_does_not_open_the_metadata_address(https_settings):
    settings = replace(https_settings, allow_networks=("cloud.test", "169.254.0.0/16"))
    document = only(listing("https://cloud.test/latest", settings,
                            resolve=lambda name, port: ["169.254.169.254"]))
    assert document.rejection and document.rejection[0] == "SSRF_REFUSED"


def test_only_https_urls_are_sources():
    with pytest.raises(InputRejected) as caught:
        HttpsSource("http://example.org/a.md", settings=HttpsSettings(), max_document_bytes=1)
    assert caught.value.reason_code == "UNSUPPORTED_SCHEME"
