"""affidavit.config.settings."""
