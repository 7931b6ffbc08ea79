"""affidavit.store.sqlite.store."""
