"""affidavit.cli.main."""
