"""Ingest and ask with the OTLP exporter pointed at a receiver on 127.0.0.1: spans are named
after the stages, nest as the pipeline does, carry hashed ids, and no canary, query or chunk
text is in any exported byte."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from affidavit.observability.traces import HASH_KEY_ENV, id_hash
from tests.observability.otlp_receiver import otlp_receiver

CANARY = "CNRYOTEL7731"
SENTENCE = "The quarterly harbour levy for berth seven is settled by the pilot office"
QUESTION = "Who settles the quarterly harbour levy for berth seven?"
HASH_KEY = "deployment-secret-for-telemetry-hashes"
KEY = HASH_KEY.encode()
SETTINGS = """tenant = "acme"
[authz]
tuples = ["group:staff#member@user:reader"]
[grants]
"group:staff#member" = ["INTERNAL", "PII"]
"""


def cli(workdir: Path, endpoint: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AFFIDAVIT_TELEMETRY__EXPORTER": '"otlp"',
           "AFFIDAVIT_TELEMETRY__ENDPOINT": f'"{endpoint}"', HASH_KEY_ENV: HASH_KEY}
    env.pop("AFFIDAVIT_DB", None)
    return subprocess.run([sys.executable, "-m", "affidavit.cli.main", *args], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def attributes(span: Span) -> dict[str, object]:
    out: dict[str, object] = {}
    for kv in span.attributes:
        value = kv.value
        out[kv.key] = getattr(value, value.WhichOneof("value") or "string_value")
    return out


def test_spans_are_stages_nested_and_hashed_and_carry_no_text(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    source = corpus / f"levy-{CANARY}.md"
    source.write_text(f"---\ntitle: Levy {CANARY}\nacl: [\"group:staff#member\"]\n---\n"
                      f"# Levy {CANARY}\n\n{SENTENCE}, reference {CANARY}.\n", encoding="utf-8")
    (tmp_path / "affidavit.toml").write_text(SETTINGS, encoding="utf-8")
    with otlp_receiver() as (endpoint, received):
        for args in (("init",), ("ingest", str(corpus)),
                     ("sire", "approve", "--all", "--by", "user:curator"),
                     ("ask", QUESTION, "--as", "user:reader")):
            done = cli(tmp_path, endpoint, *args)
            assert done.returncode in (0, 6), done.stderr
    spans = received.spans()
    names = {s.name for s in spans}
    assert {"ingest.run", "ingest.fetch", "ingest.document", "extract.md", "classify",
            "index.commit", "query.ask", "query.authz_context", "query.retrieve.lexical",
            "query.synthesize", "chat extractive-v2", "query.verify", "ledger.append"} <= names
    by_id = {s.span_id: s for s in spans}

    def parent(name: str) -> str:
        (span,) = [s for s in spans if s.name == name]
        return by_id[span.parent_span_id].name

    assert parent("extract.md") == "ingest.document"
    assert parent("classify") == "ingest.document"
    assert parent("query.retrieve.lexical") == "query.ask"
    assert parent("query.authz_context") == "query.ask"
    assert parent("chat extractive-v2") == "query.synthesize"
    assert parent("ledger.append") in ("query.verify", "query.ask")
    ask = next(s for s in spans if s.name == "query.ask")
    assert {s.trace_id for s in spans if s.name.startswith("query.")} == {ask.trace_id}
    extract = attributes(next(s for s in spans if s.name == "extract.md"))
    assert extract["affidavit.source_id_hash"] == id_hash(f"levy-{CANARY}.md", key=KEY)
    assert len(str(extract["affidavit.raw_digest_prefix"])) == 12
    chat = attributes(next(s for s in spans if s.name == "chat extractive-v2"))
    assert chat["gen_ai.operation.name"] == "chat"
    retrieval = attributes(next(s for s in spans if s.name == "query.retrieve.lexical"))
    assert int(str(retrieval["gen_ai.retrieval.top_k"])) > 0
    verify = next(s for s in spans if s.name == "query.verify")
    evaluations = [e for e in verify.events if e.name == "gen_ai.evaluation.result"]
    assert evaluations, "each verified claim is an evaluation event"
    assert {kv.key for kv in evaluations[0].attributes} == {
        "gen_ai.evaluation.name", "gen_ai.evaluation.score.label",
        "gen_ai.evaluation.score.value"}
    authz = attributes(next(s for s in spans if s.name == "query.authz_context"))
    assert authz["affidavit.principal_hash"] == id_hash("user:reader", key=KEY)
    exported = received.every_byte()
    for text in (CANARY, SENTENCE, QUESTION, "harbour levy", "user:reader", "levy-"):
        assert text.encode() not in exported, text
