"""The HTTP API (``/v1``) and the probes: thin adapters over the workspace.

Reads are public (a global read-only knowledge base, no user data); the two writes (approve a
profile draft, replace a profile) need ``Authorization: Bearer $ARKLORE_ADMIN_TOKEN`` and are
disabled (403) while no token is set. The manifest (``ARKLORE_MANIFEST``) applies to what a
chat receives (turn, relation context, persona, memories); exploring the knowledge base
(operators, relations, stages, search, timeline) shows every operator.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Iterator
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Path, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response, StreamingResponse

from arklore.chat.knowledge import ChatKnowledge, Speaker, UnknownOperatorError
from arklore.chat.session import CHAT_TASK, chat_request
from arklore.core.blocks import StageRef
from arklore.core.errors import ArkloreError, LLMError, UnknownNameError
from arklore.core.text import check_message
from arklore.service import graphview as gv
from arklore.service import review
from arklore.service.errors import ErrorOut, ServiceError, json_response
from arklore.service.models import (
    BlockOut,
    PersonaEdit,
    RelationContextOut,
    RelationContextRequest,
    TurnOut,
    TurnRequest,
)
from arklore.service.state import ServiceState

router = APIRouter()
# The two per-turn routes (and /healthz) are ``async``: their work is a few milliseconds of
# CPU (in-memory graph, cached documents, SQLite, at most one query embedding), cheaper run in
# the event loop than handed to a thread; everything slower (model calls, whole-corpus
# reads) runs in the thread pool.

NameParam = Annotated[str, Path(min_length=1, max_length=200)]
E = {
    400: {"model": ErrorOut, "description": "bad input"},
    403: {"model": ErrorOut, "description": "operator not available (manifest)"},
    404: {"model": ErrorOut, "description": "unknown operator (with the closest names)"},
    409: {"model": ErrorOut, "description": "ambiguous name (with the candidates)"},
    413: {"model": ErrorOut, "description": "message over ARKLORE_MAX_MESSAGE_CHARS"},
    503: {"model": ErrorOut, "description": "knowledge base not built"},
}
WRITE = {
    401: {"model": ErrorOut, "description": "missing or wrong bearer token"},
    403: {"model": ErrorOut, "description": "writes disabled (no ARKLORE_ADMIN_TOKEN)"},
    404: {"model": ErrorOut, "description": "no such profile"},
    409: {"model": ErrorOut, "description": "not a draft, or a read-only file"},
}


def _state(request: Request) -> ServiceState:
    st: ServiceState = request.app.state.arklore
    st.watch()
    return st


def _kb(st: ServiceState) -> ChatKnowledge:
    return st.ws.chat()


def _require_admin(request: Request, st: ServiceState) -> None:
    token = st.ws.settings.admin_token
    if not token:
        raise ServiceError(403, "writes_disabled", "write endpoints are disabled",
                           hint="set ARKLORE_ADMIN_TOKEN on the server to enable them")  # fmt: skip
    got = request.headers.get("authorization", "")
    scheme, _, value = got.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip(), token):
        raise ServiceError(401, "unauthorized", "a valid admin bearer token is required",
                           hint="send Authorization: Bearer <ARKLORE_ADMIN_TOKEN>")  # fmt: skip


def _node(st: ServiceState, name: str) -> str:
    """A graph node from an operator name/alias/id, an NPC id (``npc:…``) or node name."""
    graph = st.ws.graph()
    nid = graph.resolve(name) if name.startswith("npc:") else None
    if nid is None:
        try:
            sp = _kb(st).speaker(name, check_manifest=False)
            nid = sp.node_id
            if nid is None:
                raise UnknownNameError(f"{sp.name} ({sp.char_id}) is not in the relation graph")
        except UnknownOperatorError:
            nid = graph.resolve(name)
            if nid is None:
                raise
    return nid


# -- chat ----------------------------------------------------------------------------------
@router.post("/v1/turn", responses={200: {"model": TurnOut}, **E}, tags=["chat"])
async def post_turn(body: TurnRequest, request: Request) -> Response:
    """The system-prompt blocks of one turn (persona, relations, memories, group), with their
    token counts, sources and the reason a block is empty; with ``reply`` and an LLM
    configured, her reply too (``stream``: server-sent events ``turn``, ``delta``…, ``done``)."""
    st = _state(request)
    history = [h.model_dump() for h in body.history]
    turn = st.ws.turn(body.operator, body.message, history, body.participants, body.l3_targets)
    request.app.state.metrics.observe_turn(turn)
    out: dict[str, Any] = turn.to_dict()
    out["reply"] = None
    out["reply_error"] = None
    if not body.reply:
        return json_response(out)
    if not st.llm_configured():
        out["reply_error"] = (
            f"no LLM configured for task {CHAT_TASK} (set LLM_API_KEY, or LLM_CHAT_BASE_URL for "
            "a local server)"
        )
        return json_response(out)
    req = chat_request(turn.messages(history), key=turn.operator_id)
    if body.stream:
        return StreamingResponse(_sse(st, req, out), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache"})  # fmt: skip
    try:  # the model call waits on the network: off the event loop
        result = await run_in_threadpool(st.llm().complete, req)
        out["reply"] = result.content.strip()
    except LLMError as exc:
        out["reply_error"] = exc.one_line()
    return json_response(out)


def _event(name: str, data: Any) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


def _sse(st: ServiceState, req: Any, turn: dict[str, Any]) -> Iterator[bytes]:
    yield _event("turn", turn)
    parts: list[str] = []
    try:
        for piece in st.llm().stream(req):
            parts.append(piece)
            yield _event("delta", {"text": piece})
    except ArkloreError as exc:
        yield _event("error", {"message": exc.one_line()})
        return
    yield _event("done", {"reply": "".join(parts).strip()})


@router.post(
    "/v1/relation-context", responses={200: {"model": RelationContextOut}, **E}, tags=["chat"]
)
async def post_relation_context(body: RelationContextRequest, request: Request) -> Response:
    """The relation block alone (anchors + the people the message names), as ``arklore
    context`` gives it: what a chat calls every turn when it assembles its own prompt."""
    st = _state(request)
    kb = _kb(st)
    check_message(body.message, kb.max_message_chars)
    sp = kb.speaker(body.operator)
    ctx = kb.relation_context(sp, body.message, body.l3_targets, body.budget)
    request.app.state.metrics.observe_relations(
        "relation_context", not ctx.text, len(ctx.contextual)
    )
    return json_response({"operator_id": sp.node_id, **ctx.to_dict()})


# -- operators -----------------------------------------------------------------------------
@router.get("/v1/operators/{name}", responses=E, tags=["operators"])
def get_operator(name: NameParam, request: Request) -> Response:
    """One operator by id, Chinese name, alias or appellation: names, forms, faction, the tier
    of her profile and how much the knowledge base holds about her."""
    st = _state(request)
    kb = _kb(st)
    sp = kb.speaker(name, check_manifest=False)
    info = kb.operator_info(sp)
    info["tier"] = kb.tier(sp)
    info["appearances"] = len(kb.appearances().stage_lines(sp.family))
    try:
        graph = st.ws.graph()
        info["relations"] = len(graph.ranked(sp.node_id)) if sp.node_id else 0
    except ArkloreError:
        info["relations"] = None
    return json_response(info)


def _texts(st: ServiceState, node: str, targets: list[str]) -> dict[str, str]:
    try:
        rels = st.ws.rag().get_all_relationships_for(node, targets)
    except ArkloreError:
        return {}
    return {r.target_id: r.text for r in rels}


@router.get("/v1/operators/{name}/relations", responses=E, tags=["operators"])
def get_relations(
    name: NameParam,
    request: Request,
    limit: Annotated[int, Query(ge=1, le=200)] = 30,
    min_strength: Annotated[float, Query(ge=0, le=1)] = 0.0,
    incoming: bool = True,
) -> Response:
    """Her relations (her view of each person, strongest first, one per person) and, with
    ``incoming``, other people's view of her: the graph explorer's neighbourhood."""
    st = _state(request)
    graph = st.ws.graph()
    node = _node(st, name)
    out_edges = [e for e in graph.ranked(node) if e.strength >= min_strength][:limit]
    texts = _texts(st, node, [e.target for e in out_edges])
    result: dict[str, Any] = {
        "operator": gv.node_dict(graph, node),
        "out": [gv.edge_dict(graph, e, texts.get(e.target)) for e in out_edges],
        "categories": list(gv.CATEGORIES),
    }
    if incoming:
        best: dict[str, Any] = {}
        for e in graph.edges():
            if (
                e.target == node
                and e.strength >= min_strength
                and (e.source not in best or e.strength > best[e.source].strength)
            ):
                best[e.source] = e
        ins = sorted(best.values(), key=lambda e: (-e.strength, e.source))[:limit]
        result["in"] = [gv.edge_dict(graph, e) for e in ins]
    return json_response(result)


@router.get("/v1/relations/{a}/{b}", responses=E, tags=["operators"])
def get_relation(a: NameParam, b: NameParam, request: Request) -> Response:
    """Every edge a -> b (a's view of b) and b -> a, with the evidence lines in context (the
    cited line flagged, two lines either side)."""
    st = _state(request)
    graph = st.ws.graph()
    na, nb = _node(st, a), _node(st, b)
    ab, ba = graph.get_relation(na, nb), graph.get_relation(nb, na)
    ta, tb = _texts(st, na, [nb]), _texts(st, nb, [na])
    ids = [lid for e in ab + ba for lid in e.evidence_line_ids]
    return json_response({
        "a": gv.node_dict(graph, na),
        "b": gv.node_dict(graph, nb),
        "edges": [gv.edge_dict(graph, e, ta.get(nb)) for e in ab],
        "reverse": [gv.edge_dict(graph, e, tb.get(na)) for e in ba],
        "evidence": gv.evidence(st.ws.store(), ids),
    })  # fmt: skip


@router.get(
    "/v1/operators/{name}/memories", responses={200: {"model": BlockOut}, **E}, tags=["chat"]
)
def get_memories(
    name: NameParam,
    request: Request,
    q: str = "",
    k: Annotated[int, Query(ge=1, le=50)] = 3,
) -> Response:
    """Her top-k memories relevant to ``q``, each citable by stage (until story events are
    extracted: her appearances, ``meta.kind == "appearances"``)."""
    st = _state(request)
    kb = _kb(st)
    check_message(q, kb.max_message_chars, what="query")
    sp = kb.speaker(name)
    return json_response(st.ws.memories_block(sp.char_id, q, k).to_dict())


@router.get(
    "/v1/operators/{name}/persona", responses={200: {"model": BlockOut}, **E}, tags=["chat"]
)
def get_persona(name: NameParam, request: Request) -> Response:
    """The persona block: the sections of her profile her tier lets a chat use."""
    st = _state(request)
    kb = _kb(st)
    sp = kb.speaker(name)
    return json_response(kb.persona(sp).to_dict())


@router.put("/v1/operators/{name}/persona", responses=WRITE, tags=["review"])
def put_persona(name: NameParam, body: PersonaEdit, request: Request) -> Response:
    """Replace her profile text (``$ARKLORE_HOME/chars/<id>.char``; admin token)."""
    st = _state(request)
    _require_admin(request, st)
    sp = _kb(st).speaker(name, check_manifest=False)
    return json_response(review.save_profile(st.ws, sp.char_id, sp.name, body.text))


# -- review --------------------------------------------------------------------------------
@router.get("/v1/review", tags=["review"])
def get_review(request: Request) -> Response:
    """Profiles and drafts, drafts to review first."""
    st = _state(request)
    return json_response({"entries": review.queue(st.ws),
                          "writes_enabled": bool(st.ws.settings.admin_token)})  # fmt: skip


@router.get("/v1/review/{char_id}", responses=E, tags=["review"])
def get_review_entry(char_id: NameParam, request: Request) -> Response:
    """One profile (and a draft beside it) with its quotes beside their sources."""
    st = _state(request)
    sp = _kb(st).speaker(char_id, check_manifest=False)
    out = review.detail(st.ws, sp.char_id, request.app.state.voices)
    out["name"] = sp.name
    return json_response(out)


@router.post("/v1/review/{char_id}/approve", responses=WRITE, tags=["review"])
def post_approve(char_id: NameParam, request: Request) -> Response:
    """Approve a tier-B draft: ``[AUTO-DRAFT]`` -> ``[AUTO]`` (admin token)."""
    st = _state(request)
    _require_admin(request, st)
    sp = _kb(st).speaker(char_id, check_manifest=False)
    return json_response(review.approve_profile(st.ws, sp.char_id))


# -- the corpus ----------------------------------------------------------------------------
@router.get("/v1/timeline", responses=E, tags=["story"])
def get_timeline(
    request: Request,
    operator: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    event: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=5000)] = 500,
) -> Response:
    """Stages in story order (release order, an approximation of in-world time): hers (she
    speaks or is addressed there), an event's, or both, each with its extracted story events
    in line order once ``arklore extract events`` ran (``kind`` says which); as
    ``arklore timeline``."""
    st = _state(request)
    kb = _kb(st)
    char_id = kb.speaker(operator, check_manifest=False).char_id if operator else None
    if event is not None and event not in st.ws.store().event_ids():
        raise ServiceError(404, "unknown_event", f"no event {event!r} in the store",
                           hint="event ids look like main_0, act18d0…")  # fmt: skip
    tl = st.ws.timeline(operator=char_id, event=event, limit=limit)
    rows = [
        StageRef(s.stage_path, s.stage_code, s.story_name, s.event_name).to_dict()
        | {"avg_tag": s.avg_tag, "order": s.rank or 0, "summary": s.summary,
           "lines": s.spoken if char_id else s.lines, "addressed": s.addressed,
           "events_extracted": s.events_extracted, "events": [vars(e) for e in s.events]}
        for s in tl.stages
    ]  # fmt: skip
    extracted = any(s.events_extracted for s in tl.stages)
    return json_response({
        "kind": "events" if extracted else "appearances",
        "note": tl.note,
        "operator_ids": tl.operator_ids,
        "stages": rows,
    })  # fmt: skip


@router.get("/v1/stages/{stage_path:path}/lines", responses=E, tags=["story"])
def get_stage_lines(
    stage_path: str,
    request: Request,
    from_: Annotated[int, Query(alias="from", ge=1, le=1_000_000)] = 1,
    to: Annotated[int | None, Query(ge=1, le=1_000_000)] = None,
) -> Response:
    """A stage's lines ``from``..``to`` (at most 500) with speakers, choice branches and the
    relations citing each line (line anchors ``#L<line_no>`` in the stage reader)."""
    why = gv.check_stage_path(stage_path)
    if why:
        raise ServiceError(400, "bad_stage_path", f"{stage_path[:80]!r}: {why}")
    if to is not None and to < from_:
        raise ServiceError(400, "bad_range", f"to ({to}) is before from ({from_})")
    st = _state(request)
    store = st.ws.store()
    info = store.stage_info(stage_path)
    if info is None:
        raise ServiceError(404, "unknown_stage", f"no stage {stage_path!r}",
                           hint="stage paths look like obt/main/level_main_01-01_beg")  # fmt: skip
    last = min(to if to is not None else from_ + gv.MAX_LINES_PER_PAGE - 1,
               from_ + gv.MAX_LINES_PER_PAGE - 1)  # fmt: skip
    try:
        graph = st.ws.graph()
        cited = st.citations.of(graph)
    except ArkloreError:
        graph, cited = None, {}
    lines = [ln for ln in store.lines(stage_path) if from_ <= ln.line_no <= last]
    return json_response({
        "stage": gv.stage_dict(info),
        "from": from_,
        "to": last,
        "lines": [gv.line_dict(ln, cited.get(ln.line_id, ()), graph) for ln in lines],
    })  # fmt: skip


@router.get("/v1/search", tags=["operators"])
def get_search(
    request: Request,
    q: Annotated[str, Query(min_length=1, max_length=100)],
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> Response:
    """Operators (and other people of the graph) by any name: the name the alias table
    resolves first, then names containing the query, then the closest."""
    st = _state(request)
    kb = _kb(st)
    found: list[Speaker] = []
    matched: dict[str, str] = {}

    def add(name: str, how: str) -> None:
        try:
            sp = kb.speaker(name, check_manifest=False)
        except ArkloreError:
            return
        if sp.char_id not in matched:
            matched[sp.char_id] = how
            found.append(sp)

    add(q, "alias")
    query = q.strip()
    for op in kb.registry():
        if len(found) >= limit:
            break
        if query and (
            query in op.name or (op.appellation and query.lower() in op.appellation.lower())
        ):
            add(op.char_id, "contains")
    for name in kb.closest(query):
        add(name, "closest")
    m = kb.manifest()
    results = [
        {"id": sp.char_id, "name": sp.name, "kind": "operator", "node": sp.node_id,
         "matched": matched[sp.char_id], "available": m is None or m.allows(sp.char_id)}
        for sp in found[:limit]
    ]  # fmt: skip
    try:
        graph = st.ws.graph()
        for nid, node in graph.nodes.items():
            if len(results) >= limit:
                break
            if node.kind != "operator" and query and query in node.name:
                results.append({"id": nid, "name": node.name, "kind": "npc", "node": nid,
                                "matched": "contains", "available": False})  # fmt: skip
    except ArkloreError:
        pass
    return json_response({"query": q, "results": results})


# -- probes --------------------------------------------------------------------------------
@router.get("/healthz", tags=["probes"])
async def healthz() -> Response:
    """The process answers (with its pid: which worker answered)."""
    return json_response({"ok": True, "pid": os.getpid()})


@router.get("/readyz", tags=["probes"])
def readyz(request: Request) -> Response:
    """Store, graph and index loaded (503 with the reason otherwise)."""
    st = _state(request)
    r = st.readiness()
    return json_response(r, 200 if r["ready"] else 503)


@router.get("/metrics", tags=["probes"])
def metrics(request: Request) -> Response:
    """Prometheus metrics (see :mod:`arklore.service.metrics`)."""
    body, ctype = request.app.state.metrics.exposition()
    return Response(body, media_type=ctype)
