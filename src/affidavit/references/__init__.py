"""References (spec 004): citations of answers and soft links between documents.

:mod:`~affidavit.references.model` is the stored shape; :mod:`~affidavit.references.access`
decides what a reader may see; :mod:`~affidavit.references.links` creates and lists them;
:mod:`~affidavit.references.citations` turns an answer's citations into references;
:mod:`~affidavit.references.traversal` expands a query's scope along them.
"""

from affidavit.references.model import (
    CITATION,
    KINDS,
    LOCATION_TYPES,
    SOFT_KINDS,
    Reference,
)

__all__ = ["CITATION", "KINDS", "LOCATION_TYPES", "SOFT_KINDS", "Reference"]
