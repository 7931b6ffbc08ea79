"""affidavit.service.api."""
