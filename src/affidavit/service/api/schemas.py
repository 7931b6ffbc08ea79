"""Request and response bodies of the query endpoints.

Bodies name only what to ask. Who asks comes from the credential alone, and a field the
service does not know (a ``principal``, a ``tenant``, a misspelt option) is refused with a
422 problem naming it, never dropped: a dropped option would let an answer claim an
authority the caller did not ask for.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from affidavit.errors import LimitExceeded
from affidavit.llm.ask_options import MAX_SCOPE_SUBJECTS, AskOptions

Subject = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1,
                                           max_length=200)]


class RequestBody(BaseModel):
    """The base of every request body: unknown fields are refused (HTTP 422)."""

    # ``model_role`` is the spec's name; pydantic reserves ``model_`` unless told not to.
    model_config = ConfigDict(extra="forbid", protected_namespaces=())


class QueryRequest(RequestBody):
    query: str = Field(min_length=1, description="the question")
    model_role: Literal["authoritative", "advisory"] | None = Field(
        default=None, description="model role (spec 003 §9.1): advisory is never more than "
        "NARRATIVE_ONLY; default from [answer] role")
    role: Literal["authoritative", "advisory"] | None = Field(
        default=None, description="the older name of model_role")
    response_mode: Literal["governed", "narrative"] = Field(
        default="governed", description="narrative asks for an advisory answer (capped at "
        "NARRATIVE_ONLY)")
    inference_profile: Literal["reliability", "deep_reasoning"] = Field(
        default="reliability", description="deep_reasoning asks for stability draws where "
        "the model can be sampled ([answer] deep_reasoning_draws); recorded in the ledger")
    subject_scope: list[Subject] = Field(
        default_factory=list, max_length=MAX_SCOPE_SUBJECTS,
        description="SIRE subjects: evidence from sources whose ACTIVE SIRE Subject is not "
        "among them is dropped before the prompt (empty: no scope)")
    reference_depth: int = Field(
        default=0, ge=0, le=5, description="hops to follow references from the documents "
        "the first pass found (0: none)")

    @model_validator(mode="after")
    def _one_role(self) -> QueryRequest:
        if self.role is not None and self.model_role not in (None, self.role):
            raise ValueError("model_role and role disagree; give model_role only")
        return self

    def options(self) -> AskOptions:
        """The engine's view of what this request asks for."""
        return AskOptions(model_role=self.model_role or self.role,
                          response_mode=self.response_mode,
                          inference_profile=self.inference_profile,
                          subject_scope=tuple(self.subject_scope))


class SearchRequest(RequestBody):
    query: str = Field(min_length=1)
    limit: int | None = Field(default=None, ge=1, le=100)
    reference_depth: int = Field(
        default=0, ge=0, le=5, description="hops to follow references from the documents "
        "the first pass found (0: none)")


class QueryResponse(BaseModel):
    request_id: str
    output_state: str
    answer: str
    claims: list[dict[str, Any]]
    citations: list[dict[str, Any]]
    reasons: list[str]
    ledger_record_id: str
    ledger_record_hash: str


class SearchResponse(BaseModel):
    hits: list[dict[str, Any]]


class Problem(BaseModel):
    """An ``application/problem+json`` document (RFC 9457)."""

    model_config = ConfigDict(extra="allow")

    type: str
    title: str
    status: int
    detail: str | None = None


PROBLEMS: dict[int | str, dict[str, Any]] = {
    status: {"model": Problem, "description": text,
             "content": {"application/problem+json": {}}}
    for status, text in ((401, "no valid credential"), (403, "the role may not call this"),
                         (404, "nothing the caller may see has this id"),
                         (413, "body or query too large"), (422, "malformed request"),
                         (429, "rate limited (see Retry-After)"),
                         (502, "the provider failed; the refusal is on the ledger"),
                         (504, "deadline exceeded; the outcome is still recorded"))
}


def check_query_length(query: str, limit: int) -> None:
    if len(query) > limit:
        raise LimitExceeded("query_length", f"the query is longer than {limit} characters")
