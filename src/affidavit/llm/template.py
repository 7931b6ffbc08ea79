"""Versioned CFPO template skeletons, kept as TOML files inside the package."""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass, fields
from importlib import resources
from typing import Any

from affidavit.errors import ConfigurationError

DEFAULT_TEMPLATE = "cfpo-v1"
_VERSION_NAME = re.compile(r"[a-z0-9][a-z0-9.\-]{0,63}")
_TEXT_KEYS = (
    "system",
    "content",
    "format",
    "policy",
    "policy_advisory",
    "constraints",
    "output",
    "empty_zone",
)


@dataclass(frozen=True)
class PromptTemplate:
    """A released template: its identity plus the fixed instruction text of each zone."""

    version: str
    model_id: str
    temperature: float
    change_summary: str
    system: str
    content: str
    format: str
    policy: str
    policy_advisory: str
    constraints: str
    output: str
    empty_zone: str

    def to_dict(self) -> dict[str, Any]:
        """Plain data (for recording exactly which template compiled a prompt)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@functools.lru_cache(maxsize=16)
def load_template(version: str = DEFAULT_TEMPLATE) -> PromptTemplate:
    """Load the template ``version`` shipped in ``affidavit/answer/templates/``."""
    if not _VERSION_NAME.fullmatch(version):
        raise ConfigurationError(f"invalid template version {version!r}", key="answer.template")
    source = f"affidavit/answer/templates/{version}.toml"
    resource = resources.files("affidavit.llm").joinpath("templates", f"{version}.toml")
    try:
        data = tomllib.loads(resource.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigurationError("no such template", key="answer.template", source=source) from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"not valid TOML: {exc}", source=source) from exc
    return _template_from(data, version, source)


def _template_from(data: dict[str, Any], version: str, source: str) -> PromptTemplate:
    if data.get("version") != version:
        raise ConfigurationError("version does not match the file name", key="version",
                                 source=source)
    temperature = data.get("temperature")
    if isinstance(temperature, bool) or not isinstance(temperature, int | float):
        raise ConfigurationError("must be a number", key="temperature", source=source)
    texts = data.get("texts")
    if not isinstance(texts, dict):
        raise ConfigurationError("must be a table", key="texts", source=source)
    values = {key: _string(texts, key, source, prefix="texts.") for key in _TEXT_KEYS}
    return PromptTemplate(
        version=version,
        model_id=_string(data, "model_id", source),
        temperature=float(temperature),
        change_summary=_string(data, "change_summary", source),
        **values,
    )


def _string(table: dict[str, Any], key: str, source: str, prefix: str = "") -> str:
    value = table.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError("must be a non-empty string", key=prefix + key, source=source)
    return value.strip()
