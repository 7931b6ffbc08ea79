"""affidavit.policy."""
