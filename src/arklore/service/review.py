"""The review routes: the profile queue, one profile beside its sources, and the two writes a
reviewer makes (approve a draft, replace a profile); the curated relations with their
status and a reviewer's verdict on one (confirm, reject: the graph layer's
:meth:`~arklore.graph.facade.GraphFacade.curate_verdict`, as ``arklore curate confirm``). Request/response mapping and auth only:
every rule (which files may be written, the hand-edit check of an approval) is the profiles
layer's (:class:`~arklore.profiles.facade.ProfilesFacade`), the same the CLI calls.

Reads are public and show paths relative to ``ARKLORE_HOME`` (never the server's layout);
writes need ``Authorization: Bearer $ARKLORE_ADMIN_TOKEN`` and are disabled while it is unset.
"""

from __future__ import annotations

import hmac
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from starlette.responses import Response

from arklore.service.errors import ErrorOut, ServiceError, json_response
from arklore.service.models import CuratedVerdictIn, PersonaEdit
from arklore.service.state import ServiceState, service_state

router = APIRouter(tags=["review"])

NameParam = Annotated[str, Path(min_length=1, max_length=200)]
READ: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorOut, "description": "unknown operator, or no profile"},
    409: {"model": ErrorOut, "description": "ambiguous name"},
}
WRITE: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorOut, "description": "missing or wrong bearer token"},
    403: {"model": ErrorOut, "description": "writes disabled (no ARKLORE_ADMIN_TOKEN)"},
    404: {"model": ErrorOut, "description": "unknown operator, or no profile"},
    409: {"model": ErrorOut, "description": "not a draft, edited by hand, or a read-only file"},
}


def require_admin(request: Request, st: ServiceState) -> None:
    """403 while writes are disabled, 401 without the admin bearer token."""
    token = st.ws.settings.admin_token
    if not token:
        raise ServiceError(403, "writes_disabled", "write endpoints are disabled",
                           hint="set ARKLORE_ADMIN_TOKEN on the server to enable them")  # fmt: skip
    got = request.headers.get("authorization", "")
    scheme, _, value = got.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip(), token):
        raise ServiceError(401, "unauthorized", "a valid admin bearer token is required",
                           hint="send Authorization: Bearer <ARKLORE_ADMIN_TOKEN>")  # fmt: skip


@router.get("/v1/review")
def get_review(request: Request) -> Response:
    """Profiles and drafts, drafts to review first; ``name`` names each alone (two forms of
    阿米娅: 阿米娅 and 阿米娅（近卫）, as everywhere else)."""
    st = service_state(request)
    entries = []
    for e in st.ws.profiles.entries():
        unique = st.ws.names.unique_name(e["char_id"])
        entries.append(e | {"name": unique} if unique != e["char_id"] else e)
    return json_response({"entries": entries,
                          "writes_enabled": bool(st.ws.settings.admin_token)})  # fmt: skip


@router.get("/v1/review/{char_id}", responses=READ)
def get_review_entry(char_id: NameParam, request: Request) -> Response:
    """One profile (and a draft beside it) with its quotes beside their sources."""
    st = service_state(request)
    cid = st.ws.names.resolve(char_id)
    out = st.ws.profiles.detail(cid)
    out["name"] = st.ws.names.unique_name(cid)
    return json_response(out)


@router.post("/v1/review/{char_id}/approve", responses=WRITE)
def post_approve(
    char_id: NameParam,
    request: Request,
    accept_edits: Annotated[
        bool, Query(description="approve a draft a person edited since it was generated")
    ] = False,
) -> Response:
    """Approve a tier-B draft: ``[AUTO-DRAFT]`` -> ``[AUTO]`` (admin token). A draft edited
    by hand is refused (409) unless ``accept_edits``, as ``arklore review approve``."""
    st = service_state(request)
    require_admin(request, st)
    profiles = st.ws.profiles
    path = profiles.approve(char_id, accept_edits=accept_edits)
    found = profiles.find(st.ws.names.resolve(char_id), own=True)
    return json_response({"char_id": st.ws.names.resolve(char_id), "path": profiles.relative(path),
                          "tier": found.profile.tier if found else None})  # fmt: skip


@router.put("/v1/operators/{name}/persona", responses=WRITE)
def put_persona(name: NameParam, body: PersonaEdit, request: Request) -> Response:
    """Replace her profile text (``$ARKLORE_HOME/chars/<id>.char``; admin token)."""
    st = service_state(request)
    require_admin(request, st)
    saved = st.ws.profiles.save(name, body.text)
    return json_response({
        "char_id": saved.char_id,
        "name": st.ws.names.unique_name(saved.char_id),
        "path": st.ws.profiles.relative(saved.path),
        "tier": saved.profile.tier,
        "hand_edited": saved.profile.hand_edited,
    })  # fmt: skip


CURATED: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorOut, "description": "missing or wrong bearer token"},
    403: {"model": ErrorOut, "description": "writes disabled (no ARKLORE_ADMIN_TOKEN)"},
    404: {"model": ErrorOut, "description": "no such curated relation"},
    409: {"model": ErrorOut, "description": "the relation changed since it was shown (sha)"},
}


@router.get("/v1/curated")
def get_curated(request: Request) -> Response:
    """Every curated relation the next graph build layers: its text, evidence line ids, sha
    and status (unconfirmed, confirmed, rejected, edited-since-confirmed); counts per status."""
    st = service_state(request)
    out = st.ws.graph.curated_status()
    return json_response(out | {"writes_enabled": bool(st.ws.settings.admin_token)})


def _verdict(verdict: str, body: CuratedVerdictIn, request: Request) -> Response:
    st = service_state(request)
    require_admin(request, st)
    row = st.ws.graph.curate_verdict(
        body.from_, body.to, verdict, predicate=body.predicate, by=body.by or "admin",
        note=body.note, seen_sha=body.sha,
    )  # fmt: skip
    return json_response(row)


@router.post("/v1/curated/confirm", responses=CURATED)
def post_curated_confirm(body: CuratedVerdictIn, request: Request) -> Response:
    """Confirm a curated relation as the reviewer saw it (``sha``; admin token)."""
    return _verdict("confirmed", body, request)


@router.post("/v1/curated/reject", responses=CURATED)
def post_curated_reject(body: CuratedVerdictIn, request: Request) -> Response:
    """Reject a curated relation: every graph build leaves it out (admin token)."""
    return _verdict("rejected", body, request)
