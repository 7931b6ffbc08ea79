"""``affidavit init``: create the database; with ``--example``, first copy the bundled
example settings (``affidavit.toml``) and corpus (``corpus/``) into the working directory.

The examples come from the installed ``affidavit_examples`` package, so the first run works
from a plain ``pip install`` with no source checkout. Existing files are never overwritten
unless ``--force`` is given: an operator's own settings file must not be lost to a typo.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from affidavit.errors import ConfigurationError

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

    from affidavit.cli.context import Context

EXAMPLE_SETTINGS = "affidavit.toml"
EXAMPLE_CORPUS = "corpus"


class ExampleExists(ConfigurationError):
    """An example file would overwrite one that is already there."""


def example_files() -> list[tuple[str, Traversable]]:
    """Every file of the bundled example, as (relative path, resource), in a stable order."""
    from importlib import resources

    root = resources.files("affidavit_examples")
    found: list[tuple[str, Traversable]] = [(EXAMPLE_SETTINGS, root / EXAMPLE_SETTINGS)]
    pending: list[tuple[str, Traversable]] = [(EXAMPLE_CORPUS, root / EXAMPLE_CORPUS)]
    while pending:
        prefix, folder = pending.pop()
        for entry in folder.iterdir():
            if entry.name == "__pycache__":
                continue
            relative = f"{prefix}/{entry.name}"
            if entry.is_dir():
                pending.append((relative, entry))
            else:
                found.append((relative, entry))
    return sorted(found, key=lambda item: item[0])


def write_example(target: Path, *, force: bool = False) -> list[str]:
    """Copy the example settings and corpus under ``target``; the relative paths written.

    Refuses, before writing anything, when any of the files already exists and ``force`` is
    false, naming the first one.
    """
    import shutil

    files = example_files()
    if not force:
        existing = [name for name, _ in files if (target / name).exists()]
        if existing:
            raise ExampleExists(f"{len(existing)} example file(s) already exist, e.g. "
                                f"{existing[0]}; use --force to overwrite them",
                                source=str(target))
    for name, resource in files:
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        with resource.open("rb") as source, destination.open("wb") as sink:
            shutil.copyfileobj(source, sink)
    return [name for name, _ in files]


def cmd_init(ctx: Context) -> int:
    """Create the database (and, with ``--example``, the example settings and corpus)."""
    if getattr(ctx.args, "example", False):
        if ctx.args.config:
            # The example's settings are written to ./affidavit.toml; reading another file
            # afterwards would silently leave them unused.
            raise ConfigurationError("--example writes ./affidavit.toml; drop --config",
                                     key="--config")
        written = write_example(Path.cwd(), force=ctx.args.force)
        corpus = sum(1 for name in written if name.startswith(EXAMPLE_CORPUS + "/"))
        print(f"wrote {EXAMPLE_SETTINGS} and {corpus} files under {EXAMPLE_CORPUS}/")
        from affidavit.config import loader as config_module

        ctx.settings = config_module.load(
            None, overrides={"store.db": ctx.args.db, "tenant": ctx.args.tenant})
    store = ctx.store(create=True)
    store.ensure_tenant(ctx.tenant)
    print(f"initialized {ctx.settings.store.db} ({store.backend}, schema "
          f"v{store.schema_version()}, tenant {ctx.tenant})")
    if ctx.settings.source_file is None:
        print("no affidavit.toml found: defaults in use (no [acl] default, no groups or grants)")
    return 0
