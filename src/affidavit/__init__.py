"""Affidavit: governed retrieval-augmented generation.

The public surface is small: load :class:`Settings`, open a store, run an :class:`Ingestor`
over sources, and ask an :class:`Engine` for governed search results and verified answers.
"""

from typing import TYPE_CHECKING

from affidavit.errors import (
    AffidavitError,
    AuthorizationError,
    ConfigurationError,
    GovernanceError,
    InputRejected,
    LedgerError,
    NotFound,
    ProviderError,
    RestrictedContentError,
    StoreError,
)

if TYPE_CHECKING:
    from affidavit.config.loader import load as load_settings
    from affidavit.config.settings import Settings

__version__ = "0.1.0"

# The pipeline classes and the settings load on first use, so that importing one small
# module (say ``affidavit.records``, or the command line to print its help) does not import
# every stage.
_LAZY = {
    "Settings": "affidavit.config.settings",
    "load_settings": "affidavit.config.loader",
    "Ingestor": "affidavit.ingest.run",
    "RunSummary": "affidavit.ingest.run",
    "AskResult": "affidavit.engine.query",
    "Engine": "affidavit.engine.query",
    "SearchHit": "affidavit.engine.query",
    "SQLiteStore": "affidavit.store",
    "Store": "affidavit.store",
    "open_store": "affidavit.store",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'affidavit' has no attribute {name!r}")
    import importlib

    # ``load_settings`` is the public name of ``affidavit.config.loader.load``.
    return getattr(importlib.import_module(module), "load" if name == "load_settings" else name)

__all__ = [
    "AffidavitError",
    "AskResult",
    "AuthorizationError",
    "ConfigurationError",
    "Engine",
    "GovernanceError",
    "Ingestor",
    "InputRejected",
    "LedgerError",
    "NotFound",
    "ProviderError",
    "RestrictedContentError",
    "RunSummary",
    "SQLiteStore",
    "SearchHit",
    "Settings",
    "Store",
    "StoreError",
    "__version__",
    "load_settings",
    "open_store",
]
