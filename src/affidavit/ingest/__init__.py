"""affidavit.ingest.run."""
