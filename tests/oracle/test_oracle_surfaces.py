"""The permissions oracle over every registered surface
(:data:`affidavit.service.surfaces.SURFACES`).

The oracle world of ``oracle_world`` (two tenants, 240 generated documents, nested and
cyclic groups) is served by the real application and the real CLI; the driver walks the
registry and runs each surface's exerciser (``surface_exercisers``, ``surface_commands``,
``surface_pages``) as random principals, each with an API key or a console session of its
own. Every string that comes back is screened by the surface's declared audience
(:meth:`tests.oracle.surface_drivers.Driver.screen`): for a caller, every marker of a
document, title or heading must be one the oracle lets it see and every document path one of
a document it may read; for an admin or the operator, nothing of another tenant; for anyone
and for every span, metric and log field captured meanwhile, nothing of any document and no
principal's name.

A registered surface without an exerciser fails at once (not slow); one that the run did not
reach fails the slow run.
"""

from __future__ import annotations

import random
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from affidavit.service.surfaces import SURFACES, Kind
from tests.oracle import surface_commands, surface_exercisers, surface_pages
from tests.oracle.conftest import Universe, build_universe
from tests.oracle.surface_drivers import (
    EXERCISERS,
    Checks,
    Driver,
    Exerciser,
    captured_signals,
)

MODULES = (surface_exercisers, surface_commands, surface_pages)  # they register exercisers


def unexercised() -> list[str]:
    """Registered surfaces the oracle has no exerciser for (signals share one)."""
    return [s.name for s in SURFACES if s.kind is not Kind.SIGNAL and s.name not in EXERCISERS]


def test_every_registered_surface_has_an_oracle_exerciser() -> None:
    assert unexercised() == [], "registered surface not exercised by the oracle"


def test_every_exerciser_names_a_registered_surface() -> None:
    assert set(EXERCISERS) <= {s.name for s in SURFACES}


@pytest.fixture(scope="module")
def sqlite_universe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Universe, Path]]:
    root = tmp_path_factory.mktemp("surfaces")
    built = build_universe(root)
    yield built, root
    built.store.close()


def run_exerciser(driver: Driver, exerciser: Exerciser) -> None:
    """Run one exerciser; a surface that raises is a violation of every surface it covers
    (the others still run, so one report names every failing surface)."""
    try:
        exerciser(driver)
    except Exception as exc:
        where = traceback.format_exception(exc)[-3:]
        for name, fn in EXERCISERS.items():
            if fn is exerciser:
                driver.checks.check(name, False, f"raised {exc!r} at {''.join(where)}")


def screen_control(driver: Driver) -> None:
    """The screen is not vacuous: a marker and a path the caller may not read, given to it,
    and any marker in a span, are each reported (then forgotten)."""
    tenant = driver.tenants()[0]
    principal = driver.principal(tenant)
    hidden = next(d for d in universe_docs(driver, tenant)
                  if not driver.oracles[tenant].may_read(principal, d))
    before = list(driver.checks.violations)
    driver.screen("POST /v1/search", tenant, principal, f"{hidden.marker} {hidden.alias}")
    driver.screen("span query.search", tenant, None, hidden.marker + " " + principal)
    driver.screen("affidavit runs list", tenant, None, "mk" + ("b" if hidden.marker[2] == "a"
                                                               else "a") + "001x")
    caught = driver.checks.violations[len(before):]
    driver.checks.violations[:] = before
    assert len(caught) == 5, caught


def universe_docs(driver: Driver, tenant: str) -> list[Any]:
    return list(driver.u.worlds[tenant].docs)


@pytest.mark.slow
def test_permissions_oracle_over_every_registered_surface(
        sqlite_universe: tuple[Universe, Path]) -> None:
    universe, root = sqlite_universe
    checks = Checks()
    driver = Driver(universe, root, random.Random(20260301), checks)
    try:
        with captured_signals() as (spans, logs):
            done: set[object] = set()
            for registered in SURFACES:  # the registry's order: answers before their records
                exerciser = EXERCISERS.get(registered.name)
                if exerciser is not None and exerciser not in done:
                    done.add(exerciser)
                    run_exerciser(driver, exerciser)
            surface_pages.signal_sources(driver)
            finished = list(spans.get_finished_spans())
        surface_pages.signal_exerciser(driver, finished, logs.getvalue())
        screen_control(driver)
    finally:
        driver.close()
    print("\n" + checks.report())
    assert not checks.violations, "\n".join(checks.violations[:30])
    reached = {s.name for s in SURFACES if checks.counts.get(s.name, 0) > 0}
    assert [s.name for s in SURFACES if s.name not in reached] == [], \
        "registered surface not exercised by the oracle"
    assert checks.total >= 100_000, checks.report()
