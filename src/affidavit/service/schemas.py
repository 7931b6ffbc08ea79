"""Request and response bodies of the query endpoints.

Bodies name only what to ask: unknown fields (a ``principal``, a ``tenant``) are ignored,
because who asks comes from the credential alone.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from affidavit.errors import LimitExceeded


class QueryRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    query: str = Field(min_length=1, description="the question")
    role: Literal["authoritative", "advisory"] | None = Field(
        default=None, description="model role (spec 003 §9.1); default from the settings")
    response_mode: Literal["governed", "narrative"] = Field(
        default="governed", description="narrative asks for an advisory answer")
    inference_profile: Literal["reliability"] = Field(
        default="reliability", description="the only profile this engine offers")
    reference_depth: int = Field(
        default=0, ge=0, le=5, description="hops to follow references from the documents "
        "the first pass found (0: none)")

    def model_role(self) -> str | None:
        if self.role is not None:
            return self.role
        return "advisory" if self.response_mode == "narrative" else None


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

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
