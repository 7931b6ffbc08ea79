"""affidavit.util."""
