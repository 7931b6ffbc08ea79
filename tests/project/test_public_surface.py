"""The public surface (``affidavit.__all__``, every command and option, every HTTP route,
every settings key) is pinned: ``public_surface.json`` was printed by
``python tests/project/public_surface.py`` from the tree before the package was
restructured, and the restructured package must print the same. A deliberate change to the
surface updates the pin and says so in CHANGELOG.md."""

from __future__ import annotations

import json
from pathlib import Path

from public_surface import public_surface  # tests/project/ is on the path (rootdir-less module)

PIN = Path(__file__).with_name("public_surface.json")


def test_the_public_surface_is_the_pinned_one() -> None:
    pinned = json.loads(PIN.read_text(encoding="utf-8"))
    current = public_surface()
    for part in ("exports", "commands", "routes", "settings"):
        assert current[part] == pinned[part], f"the public {part} changed"


def test_the_pin_covers_every_part_of_the_surface() -> None:
    pinned = json.loads(PIN.read_text(encoding="utf-8"))
    # A pin that lost a part (an empty list, say) would pass vacuously.
    assert len(pinned["exports"]) >= 20
    assert len(pinned["commands"]) >= 50 and "serve" in pinned["commands"]
    assert len(pinned["routes"]) >= 50 and "POST /v1/query" in pinned["routes"]
    assert len(pinned["settings"]) >= 150 and "store.db" in pinned["settings"]
