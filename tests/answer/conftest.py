"""Fixtures of the answering tests: the scripted OpenAI-compatible server."""

from answer_fake_openai import fake_openai

__all__ = ["fake_openai"]
