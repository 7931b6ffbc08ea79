"""affidavit.store.postgres.store."""
