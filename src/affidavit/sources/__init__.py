"""Stage A: where documents come from, and what they declare about themselves."""

from affidavit.sources.base import Transport
from affidavit.sources.https import HttpsSource
from affidavit.sources.local import LocalFolderSource
from affidavit.sources.locate import listing_key, location_scheme, source_for
from affidavit.sources.manifest import parse_manifest
from affidavit.sources.memory import StaticSource
from affidavit.sources.metadata import (
    SIDECAR_SUFFIX,
    is_acl_subject,
    load_sidecar,
    parse_metadata,
)
from affidavit.sources.netguard import AddressPolicy, address_problem, parse_ip_literal, vet_host
from affidavit.sources.safe_yaml import load_yaml_documents
from affidavit.sources.sftp import SftpSource, parse_sftp_url

__all__ = [
    "SIDECAR_SUFFIX",
    "AddressPolicy",
    "HttpsSource",
    "LocalFolderSource",
    "SftpSource",
    "StaticSource",
    "Transport",
    "address_problem",
    "is_acl_subject",
    "listing_key",
    "load_sidecar",
    "load_yaml_documents",
    "location_scheme",
    "parse_ip_literal",
    "parse_manifest",
    "parse_metadata",
    "parse_sftp_url",
    "source_for",
    "vet_host",
]
