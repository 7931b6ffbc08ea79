"""Exercisers of the operator's CLI commands (those that act for whoever opens the database,
within one ``--tenant``): each runs against the oracle's database for each tenant, and what
it prints may name anything of that tenant and nothing of the other."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout

from affidavit.cli.main import main as cli_main
from affidavit.service.surfaces import Audience
from tests.oracle.surface_drivers import Driver, exercises

BROKEN = "---\nclassification: NOPE\n---\n# unlabelled\n\nSome plain text.\n"


def run(d: Driver, name: str, tenant: str, *argv: str, ok: tuple[int, ...] = (0,),
        principal: str | None = None, supplied: str = "") -> str:
    """Run command ``name`` (its words after ``affidavit``) with ``argv`` and screen it."""
    code, out = d.cli(tenant, *name.split(" ")[1:], *argv)
    d.checks.check(name, code in ok, f"exit {code}: {out[-400:]}")
    d.screen(name, tenant, principal, out, supplied)
    return out


@exercises("affidavit runs list", "affidavit runs show", "affidavit quarantine list",
           "affidavit quarantine show", "affidavit ingest", "affidavit quarantine release")
def run_commands(d: Driver) -> None:
    for tenant in d.tenants():
        folder = d.root / f"broken-{tenant}"
        folder.mkdir(exist_ok=True)
        (folder / "broken.md").write_text(BROKEN, encoding="utf-8")
        # --partial: not a full listing, so nothing of the tenant is withdrawn.
        printed = run(d, "affidavit ingest", tenant, str(folder), "--partial", "--json",
                      "--quiet", ok=(3,))
        summary = json.JSONDecoder().raw_decode(printed)[0]
        run_id = summary["run_id"]
        run(d, "affidavit runs list", tenant, "--json")
        for listed in d.u.store.list_runs(tenant, limit=50):
            run(d, "affidavit runs show", tenant, listed.run_id, "--json")
        run(d, "affidavit quarantine list", tenant, "--all", "--json")
        run(d, "affidavit quarantine show", tenant, run_id, "broken.md", "--json")
        run(d, "affidavit quarantine release", tenant, run_id, "broken.md", "--by",
            "user:operator")


@exercises("affidavit sire list", "affidavit sire approve")
def sire_commands(d: Driver) -> None:
    for tenant in d.tenants():
        run(d, "affidavit sire list", tenant, "--json")
        for _ in range(8):
            principal = d.principal(tenant)
            code, out = d.cli(tenant, "sire", "list", "--as", principal, "--json")
            d.checks.check("affidavit sire list", code == 0, out[-300:])
            # --as narrows the operator's view to the principal's: screened as a caller's
            d.screen("affidavit sire list", tenant, principal, out, audience=Audience.CALLER)
        run(d, "affidavit sire approve", tenant, "--all", "--by", "user:curator")


@exercises("affidavit whoami", "affidavit authz explain", "affidavit authz list",
           "affidavit authz add", "affidavit authz remove", "affidavit authz grant",
           "affidavit authz revoke")
def authz_commands(d: Driver) -> None:
    for tenant in d.tenants():
        world = d.u.worlds[tenant]
        for _ in range(6):
            principal, doc = d.principal(tenant), d.doc(tenant)
            run(d, "affidavit whoami", tenant, "--as", principal, "--json")
            run(d, "affidavit authz explain", tenant, "--as", principal, doc.alias, "--json",
                supplied=doc.alias)
        run(d, "affidavit authz list", tenant, "--json")
        transient = f"{world.groups[0]}#member@user:oracle-transient"
        run(d, "affidavit authz add", tenant, transient, "--by", "user:operator")
        run(d, "affidavit authz remove", tenant, transient, "--by", "user:operator")
        run(d, "affidavit authz grant", tenant, "user:oracle-transient", "SECRET")
        run(d, "affidavit authz revoke", tenant, "user:oracle-transient", "SECRET")


@exercises("affidavit audit list", "affidavit audit verify", "affidavit audit checkpoint",
           "affidavit ledger verify",
           "affidavit ledger keygen", "affidavit ledger checkpoint", "affidavit ledger replay")
def trail_commands(d: Driver) -> None:
    key = d.root / "checkpoint.key"
    for tenant in d.tenants():
        run(d, "affidavit audit list", tenant, "--json")
        if not key.exists():
            run(d, "affidavit ledger keygen", tenant, "--out", str(key))
        trail = d.root / f"trail-{tenant}.json"
        run(d, "affidavit audit checkpoint", tenant, "--key", str(key), "--out", str(trail),
            "--json")
        # Exit 1: the oracle writes its tuples, grants and keys straight to the store, so
        # the trail's replay finds them live without the events that made them.
        run(d, "affidavit audit verify", tenant, "--checkpoint", str(trail), "--key",
            f"{key}.pub", "--json", ok=(0, 1))
        point = d.root / f"checkpoint-{tenant}.json"
        run(d, "affidavit ledger checkpoint", tenant, "--key", str(key), "--out", str(point),
            "--json")
        run(d, "affidavit ledger verify", tenant, "--checkpoint", str(point), "--key",
            f"{key}.pub", "--json")
        for record in [r for r in d.records if r[0] == tenant][:6]:
            run(d, "affidavit ledger replay", tenant, record[2], "--json", ok=(0, 1))


@exercises("affidavit labels sources", "affidavit labels override", "affidavit labels lapsed",
           "affidavit requalify",
           "affidavit identity list", "affidavit identity resolve")
def corpus_commands(d: Driver) -> None:
    for tenant in d.tenants():
        for _ in range(6):
            run(d, "affidavit labels sources", tenant, d.doc(tenant).alias, "--json")
        run(d, "affidavit labels lapsed", tenant, "--json")
        run(d, "affidavit requalify", tenant, "--plan", "--json")
        run(d, "affidavit requalify", tenant, "--canary", "2", "--json")
        run(d, "affidavit identity list", tenant, "--json")
        run(d, "affidavit identity resolve", tenant, "nowhere.md", "--keep", "--by",
            "user:operator", ok=(2,))
        # An override recorded and withdrawn: in force from a next ingestion run only.
        doc = d.doc(tenant).alias
        run(d, "affidavit labels override", tenant, doc, "0", "PUBLIC", "--reason", "oracle",
            "--by", "user:operator", "--json")
        run(d, "affidavit labels override", tenant, doc, "0", "none", "--reason", "oracle",
            "--by", "user:operator", "--json")


@exercises("affidavit keys create", "affidavit keys list", "affidavit keys revoke")
def key_commands(d: Driver) -> None:
    for tenant in d.tenants():
        made = json.JSONDecoder().raw_decode(run(d, "affidavit keys create", tenant,
                                                 "--principal", "user:oracle-cli", "--json"))[0]
        run(d, "affidavit keys list", tenant, "--json")
        run(d, "affidavit keys revoke", tenant, made["record"]["key_id"]
            if "record" in made else made["key_id"])


@exercises("affidavit init", "affidavit worker", "affidavit serve", "affidavit doctor",
           "affidavit verify-claims", "affidavit completion", "affidavit demo",
           "affidavit canary run", "affidavit backup", "affidavit restore")
def process_commands(d: Driver) -> None:
    tenant = d.tenants()[0]
    fresh = str(d.root / "fresh.db")
    code, out = d.cli(tenant, "init", db=fresh)
    d.checks.check("affidavit init", code == 0, out)
    d.screen("affidavit init", tenant, None, out)
    # SQLite has no ingestion queue: the worker refuses (5: configuration; 2: when the
    # worker module cannot be imported), and says so plainly.
    run(d, "affidavit worker", tenant, "--once", ok=(0, 2, 5))
    run(d, "affidavit serve", tenant, "--print-openapi")
    run(d, "affidavit doctor", tenant, "--json", ok=(0, 1))
    claims = d.root / "claims.jsonl"
    claims.write_text(json.dumps({"id": "c1", "claim": "The sky is blue.",
                                  "evidence": ["The sky is blue today."]}) + "\n",
                      encoding="utf-8")
    run(d, "affidavit verify-claims", tenant, str(claims))
    backup = d.root / "backup"
    run(d, "affidavit backup", tenant, str(backup), "--json")
    # Restored to a database of its own: the oracle's stays as it is.
    code, out = d.cli(tenant, "restore", str(backup), "--json", db=str(d.root / "restored.db"))
    d.checks.check("affidavit restore", code == 0, out[-300:])
    d.screen("affidavit restore", tenant, None, out)
    run(d, "affidavit canary run", tenant, "--scratch-tenant", "oracle-canary", "--json",
        ok=(0, 1))
    for name, argv in (("affidavit completion", ["completion", "bash"]),
                       ("affidavit demo", ["demo", "--json"])):
        out_buffer = io.StringIO()
        with redirect_stdout(out_buffer), redirect_stderr(out_buffer):
            code = cli_main(argv)
        d.checks.check(name, code == 0, out_buffer.getvalue()[-300:])
        d.screen(name, tenant, None, out_buffer.getvalue())
