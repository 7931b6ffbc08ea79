"""affidavit.engine."""
