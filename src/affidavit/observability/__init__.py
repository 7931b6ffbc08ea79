"""affidavit.observability."""
