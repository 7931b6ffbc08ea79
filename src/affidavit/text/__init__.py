"""affidavit.text."""
