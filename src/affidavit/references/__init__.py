"""References (spec 004): citations of answers and soft links between documents.

:mod:`~affidavit.records` is the stored shape; :mod:`~affidavit.references.access`
decides what a reader may see; :mod:`~affidavit.references.links` creates and lists them;
:mod:`~affidavit.references.citations` turns an answer's citations into references;
:mod:`~affidavit.retrieval.reference_expansion` expands a query's scope along them.
"""

from affidavit.records import CITATION, KINDS, LOCATION_TYPES, SOFT_KINDS, Reference

__all__ = ["CITATION", "KINDS", "LOCATION_TYPES", "SOFT_KINDS", "Reference"]
