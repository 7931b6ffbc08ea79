"""Stage A: where documents come from, and what they declare about themselves."""

from affidavit.sources.base import Transport
from affidavit.sources.local import LocalFolderSource
from affidavit.sources.memory import StaticSource
from affidavit.sources.metadata import (
    SIDECAR_SUFFIX,
    is_acl_subject,
    load_sidecar,
    parse_metadata,
)
from affidavit.sources.safe_yaml import load_yaml_documents

__all__ = [
    "SIDECAR_SUFFIX",
    "LocalFolderSource",
    "StaticSource",
    "Transport",
    "is_acl_subject",
    "load_sidecar",
    "load_yaml_documents",
    "parse_metadata",
]
