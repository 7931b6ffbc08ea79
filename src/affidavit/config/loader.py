"""Loading :class:`~affidavit.config.settings.Settings`: the TOML file, then ``AFFIDAVIT_*``
environment variables, then explicit overrides, each value coerced to its declared type and
every unknown key refused by name; the result is validated
(:mod:`affidavit.config.validate`) before anything uses it.

It sits above the settings model and its validation, so neither imports the other back.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_type_hints

from affidavit.config.settings import CONFIG_FILENAME, Settings, TenantPolicySettings
from affidavit.config.validate import validate
from affidavit.errors import ConfigurationError

# How the tenant tables' type reads in a resolved hint (the class lives in config.settings).
_TENANT_POLICY = f"{TenantPolicySettings.__module__}.{TenantPolicySettings.__qualname__}"


def load(
    config_path: str | Path | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Build settings from defaults, the TOML file, the environment and ``overrides``.

    ``overrides`` uses dotted keys (``{"store.db": "x.db", "tenant": "acme"}``) and is how
    command-line flags take the highest precedence.
    """
    env = os.environ if environ is None else environ
    base = Path(cwd) if cwd is not None else Path.cwd()
    explicit = config_path or env.get("AFFIDAVIT_CONFIG")
    data: dict[str, Any] = {}
    source: str | None = None
    if explicit:
        path = Path(explicit)
        if not path.is_absolute():
            path = base / path
        if not path.is_file():
            raise ConfigurationError("configuration file not found", source=str(path))
        data, source = _read_toml(path), str(path)
    elif (base / CONFIG_FILENAME).is_file():
        path = base / CONFIG_FILENAME
        data, source = _read_toml(path), str(path)

    for key, value in _env_items(env):
        _set_dotted(data, key, value, source="environment")
    # The home tenant is what the file and the environment say: a command line naming
    # another tenant acts on it without handing it the top-level policy.
    home = data.get("tenant", Settings.tenant)
    if not isinstance(home, str):
        raise ConfigurationError("must be a string", key="tenant", source=source or "defaults")
    for key, value in (overrides or {}).items():
        if value is not None:
            _set_dotted(data, key, value, source="command line")

    built: Settings = _build(Settings, data, "", source or "defaults")
    settings = built.replace(source_file=source, home_tenant=home)
    _validated(settings)
    return settings


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            data: dict[str, Any] = tomllib.load(handle)
            return data
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"not valid TOML: {exc}", source=str(path)) from exc
    except OSError as exc:
        raise ConfigurationError(f"cannot read: {exc.strerror}", source=str(path)) from exc


def _env_items(env: Mapping[str, str]) -> list[tuple[str, Any]]:
    items: list[tuple[str, Any]] = []
    for name in sorted(env):
        if not name.startswith("AFFIDAVIT_") or name == "AFFIDAVIT_CONFIG":
            continue
        raw = env[name]
        rest = name[len("AFFIDAVIT_") :].lower()
        if rest == "db":
            items.append(("store.db", raw))
        elif rest == "tenant":
            items.append(("tenant", raw))
        elif "__" in rest:
            items.append((rest.replace("__", "."), _parse_env_value(raw)))
    return items


def _parse_env_value(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def _set_dotted(data: dict[str, Any], key: str, value: Any, *, source: str) -> None:
    parts = key.split(".")
    target = data
    for part in parts[:-1]:
        nxt = target.setdefault(part, {})
        if not isinstance(nxt, dict):
            raise ConfigurationError("is not a table", key=part, source=source)
        target = nxt
    target[parts[-1]] = value


# Set by load from where a value came from, never read from a settings source.
_DERIVED_FIELDS = frozenset({"source_file", "home_tenant"})


def _build(cls: type[Any], data: Any, prefix: str, source: str) -> Any:
    if not isinstance(data, Mapping):
        raise ConfigurationError("must be a table", key=prefix.rstrip(".") or None, source=source)
    hints = get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls) if f.name not in _DERIVED_FIELDS}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigurationError(_unknown_message(unknown[0], data[unknown[0]], names, prefix),
                                 key=prefix + unknown[0], source=source)
    kwargs: dict[str, Any] = {}
    for name in names:
        if name not in data:
            continue
        kwargs[name] = _coerce(hints[name], data[name], prefix + name, source)
    return cls(**kwargs)


def _unknown_message(name: str, value: Any, valid: set[str], prefix: str) -> str:
    """"unknown setting" (or section), with the nearest valid name when one is close."""
    kind = "section" if isinstance(value, Mapping) else "setting"
    nearest = difflib.get_close_matches(name, sorted(valid), n=1, cutoff=0.6)
    if nearest:
        return f"unknown {kind}; did you mean {prefix + nearest[0]!r}?"
    return f"unknown {kind}; valid here: {', '.join(sorted(valid))}"


def _coerce(hint: Any, value: Any, key: str, source: str) -> Any:
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _build(hint, value, key + ".", source)
    text = str(hint)
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigurationError("must be true or false", key=key, source=source)
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigurationError("must be an integer", key=key, source=source)
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigurationError("must be a number", key=key, source=source)
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigurationError("must be a string", key=key, source=source)
        return value
    if text.startswith("tuple[str"):
        return _string_list(value, key, source)
    if text.startswith("collections.abc.Mapping[str, tuple[str"):
        if not isinstance(value, Mapping):
            raise ConfigurationError("must be a table of lists", key=key, source=source)
        return {str(k): _string_list(v, f"{key}.{k}", source) for k, v in value.items()}
    if text == f"collections.abc.Mapping[str, {_TENANT_POLICY}]":
        if not isinstance(value, Mapping):
            raise ConfigurationError("must be a table of tenant tables", key=key, source=source)
        return {str(k): _build(TenantPolicySettings, v, f"{key}.{k}.", source)
                for k, v in value.items()}
    if text.startswith("collections.abc.Mapping[str, str]"):
        if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
            raise ConfigurationError("must be a table of strings", key=key, source=source)
        return dict(value)
    raise ConfigurationError(f"unsupported setting type {text}", key=key, source=source)


def _string_list(value: Any, key: str, source: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ConfigurationError("must be a list of strings", key=key, source=source)
    return tuple(value)


def _validated(settings: Settings) -> None:
    # The rules live beside the sections they check; imported here because they need
    # this module's label constants.
    validate(settings)
