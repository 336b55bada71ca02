"""The HTTP API (``/v1``) and the probes: request/response mapping over the workspace's
facades, which the CLI calls too (the review routes are in :mod:`.review`).

Reads are public (a global read-only knowledge base, no user data). The manifest (``ARKLORE_MANIFEST``) applies to what a
chat receives (turn, relation context, persona, memories); exploring the knowledge base
(operators, relations, stages, search, timeline) shows every operator.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, Path, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import PlainTextResponse, Response, StreamingResponse

from arklore.chat.session import CHAT_TASK, chat_request
from arklore.core.errors import ArkloreError, LLMError
from arklore.core.text import check_message
from arklore.service import graphview as gv
from arklore.service import turns
from arklore.service.errors import ErrorOut, ServiceError, json_response
from arklore.service.models import (
    RelationContextOut,
    RelationContextRequest,
    TurnOut,
    TurnRequest,
)
from arklore.service.openai import authorize
from arklore.service.state import ServiceState, service_state
from arklore.service.turns import turn_runner

router = APIRouter()
# No route does its work in the event loop, so a probe (``/healthz``) answers while turns are
# busy: the two per-turn routes hand the turn to the turn workers (:mod:`.turns`: processes of
# their own under ``arklore serve``), the model call to the thread pool, and every other route
# is a plain ``def`` (FastAPI runs it in the thread pool).

NameParam = Annotated[str, Path(min_length=1, max_length=200)]
E: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorOut, "description": "bad input"},
    403: {"model": ErrorOut, "description": "operator not available (manifest)"},
    404: {"model": ErrorOut, "description": "unknown operator (with the closest names)"},
    409: {"model": ErrorOut, "description": "ambiguous name (with the candidates)"},
    413: {"model": ErrorOut, "description": "message over ARKLORE_MAX_MESSAGE_CHARS"},
    503: {"model": ErrorOut, "description": "knowledge base not built"},
}


def _node(st: ServiceState, name: str) -> str:
    """A graph node from an operator name/alias/id, an NPC id (``npc:…``) or a node name."""
    return st.ws.graph.node(name)


# -- chat ----------------------------------------------------------------------------------
@router.post("/v1/turn", responses={200: {"model": TurnOut}, **E}, tags=["chat"])
async def post_turn(body: TurnRequest, request: Request) -> Response:
    """The system-prompt blocks of one turn (persona, relations, memories, group), with their
    token counts, sources and the reason a block is empty; with ``reply`` and an LLM
    configured, her reply too (``stream``: server-sent events ``turn``, ``delta``…, ``done``)."""
    st = service_state(request)
    if body.reply:  # her reply spends the LLM key: the clients of /v1/chat/completions only
        authorize(request, st.ws.settings)
    history = [h.model_dump() for h in body.history]
    turn = await turn_runner(request).run(
        turns.turn, body.operator, body.message, history, body.participants, body.l3_targets,
        False, body.until,
    )  # fmt: skip
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
    try:  # the model call waits on the network: in the thread pool
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


@router.get("/v1/llm", tags=["chat"])
def get_llm(request: Request) -> Response:
    """Whether her replies can be written (``configured``: an LLM for task ``chat``): the chat
    page streams them from ``/v1/chat/completions`` then, else shows each turn's blocks."""
    st = service_state(request)
    return json_response({"task": CHAT_TASK, "configured": st.llm_configured()})


@router.post(
    "/v1/relation-context", responses={200: {"model": RelationContextOut}, **E}, tags=["chat"]
)
async def post_relation_context(body: RelationContextRequest, request: Request) -> Response:
    """The relation block alone (anchors + the people the message names), as ``arklore
    context`` gives it: what a chat calls every turn when it assembles its own prompt."""
    service_state(request)
    sp, ctx = await turn_runner(request).run(
        turns.relation_context, body.operator, body.message, body.l3_targets, body.budget,
        body.until,
    )  # fmt: skip
    request.app.state.metrics.observe_relations(
        "relation_context", not ctx.text, len(ctx.contextual)
    )
    return json_response({"operator_id": sp.node_id, **ctx.to_dict()})


# -- operators -----------------------------------------------------------------------------
@router.get("/v1/operators", responses=E, tags=["operators"])
def get_operators(
    request: Request,
    sort: Literal["name", "connected"] = "name",
    limit: Annotated[int, Query(ge=1, le=5000)] = 5000,
) -> Response:
    """Operators with a name that names each alone (``name``: 阿米娅（近卫）, as the model ids
    of ``/v1/models``), whether a chat may use her (``available``, the manifest) and how many
    people the graph relates to her (``relations``, null without a graph). ``sort=connected``:
    the operators related to the most people, most first (the explorer's suggestions)."""
    st = service_state(request)
    names, m = st.ws.names, st.ws.chat.manifest()
    if sort == "connected":
        ranked: list[tuple[str, int | None]] = list(st.ws.graph.most_connected(limit))
    else:
        counts: dict[str, int] = {}
        graph = st.ws.graph.current_or_none()
        if graph is not None:
            counts = dict(st.ws.graph.most_connected(len(graph.nodes)))
        ranked = [(op.char_id, counts.get(op.char_id, 0) if graph is not None else None)
                  for op in names.operators()][:limit]  # fmt: skip
    return json_response({"operators": [
        {"id": cid, "name": names.unique_name(cid), "display_name": names.display_name(cid),
         "available": m is None or m.allows(cid), "relations": n}
        for cid, n in ranked
    ]})  # fmt: skip


@router.get("/v1/operators/{name}", responses=E, tags=["operators"])
def get_operator(name: NameParam, request: Request) -> Response:
    """One operator by id, Chinese name, alias or appellation: names (``unique_name``: the
    one that names her alone, ``form_names``: her forms' likewise), forms, faction, the tier
    of her profile and how much the knowledge base holds about her."""
    st = service_state(request)
    sp = st.ws.chat.speaker(name, check_manifest=False)
    info = st.ws.chat.operator_info(sp)
    info["unique_name"] = st.ws.names.unique_name(sp.char_id)
    info["form_names"] = [st.ws.names.unique_name(c) for c in info.get("forms", [])]
    info["appearances"] = len(st.ws.events.appearances_of(sp.family))
    try:
        graph = st.ws.graph.current()
        info["relations"] = len(graph.ranked(sp.node_id)) if sp.node_id else 0
    except ArkloreError:
        info["relations"] = None
    return json_response(info)


def _texts(st: ServiceState, node: str, targets: list[str]) -> dict[str, str]:
    try:
        rels = st.ws.rag.service().get_all_relationships_for(node, targets)
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
    st = service_state(request)
    graph = st.ws.graph.current()
    node = _node(st, name)
    label = gv.labeller(graph, st.ws.names)
    out_edges = [e for e in graph.ranked(node) if e.strength >= min_strength][:limit]
    texts = _texts(st, node, [e.target for e in out_edges])
    result: dict[str, Any] = {
        "operator": gv.node_dict(graph, node, label),
        "out": [gv.edge_dict(graph, e, texts.get(e.target), label) for e in out_edges],
        "categories": list(gv.CATEGORIES),
    }
    if incoming:
        ins = st.ws.graph.incoming(node, min_strength=min_strength, limit=limit)
        result["in"] = [gv.edge_dict(graph, e, label=label) for e in ins]
    return json_response(result)


@router.get("/v1/relations/{a}/{b}", responses=E, tags=["operators"])
def get_relation(a: NameParam, b: NameParam, request: Request) -> Response:
    """Every edge a -> b (a's view of b) and b -> a, with the evidence lines in context (the
    cited line flagged, two lines either side)."""
    st = service_state(request)
    graph = st.ws.graph.current()
    na, nb = _node(st, a), _node(st, b)
    label = gv.labeller(graph, st.ws.names)
    ab, ba = graph.get_relation(na, nb), graph.get_relation(nb, na)
    ta, tb = _texts(st, na, [nb]), _texts(st, nb, [na])
    ids = [lid for e in ab + ba for lid in e.evidence_line_ids]
    return json_response({
        "a": gv.node_dict(graph, na, label),
        "b": gv.node_dict(graph, nb, label),
        "edges": [gv.edge_dict(graph, e, ta.get(nb), label) for e in ab],
        "reverse": [gv.edge_dict(graph, e, tb.get(na), label) for e in ba],
        "evidence": gv.evidence(st.ws.corpus.store(), ids),
    })  # fmt: skip


@router.get("/v1/operators/{name}/memories", responses=E, tags=["chat"])
def get_memories(
    name: NameParam,
    request: Request,
    q: str = "",
    k: Annotated[int, Query(ge=1, le=50)] = 3,
) -> Response:
    """Her top-k memories relevant to ``q``, each citable by stage (until story events are
    extracted: her appearances, ``kind == "appearances"``), as ``arklore memories --json``,
    with ``block``: what a chat turn injects of them."""
    ws = service_state(request).ws
    check_message(q, ws.settings.max_message_chars, what="query")
    sp = ws.chat.speaker(name)
    mem = ws.events.memories(sp.char_id, q or None, k)
    return json_response(mem.to_dict() | {"block": ws.chat.memories_block(sp, mem).to_dict()})


@router.get("/v1/operators/{name}/persona", responses=E, tags=["chat"])
def get_persona(name: NameParam, request: Request) -> Response:
    """The sections of her profile her tier lets a chat use, as ``arklore persona --json``,
    with ``block``: the persona block a chat turn injects."""
    ws = service_state(request).ws
    sp = ws.chat.speaker(name)
    persona = ws.profiles.persona(sp.char_id).to_dict()
    return json_response(persona | {"block": ws.chat.persona(sp).to_dict()})


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
    tl = service_state(request).ws.events.timeline(operator=operator, event=event, limit=limit)
    return json_response(tl.to_dict())


@router.get("/v1/stages/{stage_path:path}/lines", responses=E, tags=["story"])
def get_stage_lines(
    stage_path: Annotated[str, Path(json_schema_extra=gv.STAGE_PATH_SCHEMA)],
    request: Request,
    from_: Annotated[int, Query(alias="from", ge=1, le=1_000_000)] = 1,
    to: Annotated[int | None, Query(ge=1, le=1_000_000)] = None,
) -> Response:
    """A stage's lines ``from``..``to`` (at most 500; none when ``to`` is before ``from``) with
    speakers, choice branches and the relations citing each line (line anchors ``#L<line_no>``
    in the stage reader)."""
    why = gv.check_stage_path(stage_path)
    if why:
        raise ServiceError(400, "bad_stage_path", f"{stage_path[:80]!r}: {why}")
    st = service_state(request)
    store = st.ws.corpus.store()
    info = store.stage_info(stage_path)
    if info is None:
        raise ServiceError(404, "unknown_stage", f"no stage {stage_path!r}",
                           hint="stage paths look like obt/main/level_main_01-01_beg")  # fmt: skip
    last = min(to if to is not None else from_ + gv.MAX_LINES_PER_PAGE - 1,
               from_ + gv.MAX_LINES_PER_PAGE - 1)  # fmt: skip
    try:
        graph = st.ws.graph.current()
        cited = st.citations.of(graph)
    except ArkloreError:
        graph, cited = None, {}
    label = gv.labeller(graph, st.ws.names) if graph is not None else None
    lines = [ln for ln in store.lines(stage_path) if from_ <= ln.line_no <= last]
    return json_response({
        "stage": gv.stage_dict(info),
        "from": from_,
        "to": last,
        "lines": [gv.line_dict(ln, cited.get(ln.line_id, ()), graph, label) for ln in lines],
    })  # fmt: skip


@router.get("/v1/search", tags=["operators"])
def get_search(
    request: Request,
    q: Annotated[str, Query(min_length=1, max_length=100)],
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> Response:
    """Operators (and other people of the graph) by any name: exact names first (an alias,
    or a person's name in the graph), then names containing the query, then the closest.
    An operator's ``name`` names her alone (阿米娅（近卫）)."""
    ws = service_state(request).ws
    m = ws.chat.manifest()
    results = [
        r | ({"name": ws.names.unique_name(r["id"]), "available": m is None or m.allows(r["id"])}
             if r["kind"] == "operator" else {"available": False})
        for r in ws.graph.search(q, limit)
    ]  # fmt: skip
    return json_response({"query": q, "results": results})


# -- probes --------------------------------------------------------------------------------
@router.get("/healthz", tags=["probes"])
async def healthz() -> Response:
    """The process answers (with its pid: which worker answered)."""
    return json_response({"ok": True, "pid": os.getpid()})


@router.get(
    "/readyz",
    tags=["probes"],
    responses={503: {"model": dict[str, Any], "description": "not ready (the reasons)"}},
)
def readyz(request: Request) -> Response:
    """Store, graph and index loaded (503 with the reason otherwise)."""
    st = service_state(request)
    r = st.readiness()
    return json_response(r, 200 if r["ready"] else 503)


@router.get("/metrics", tags=["probes"], response_class=PlainTextResponse)
def metrics(request: Request) -> Response:
    """Prometheus metrics (see :mod:`arklore.service.metrics`)."""
    body, ctype = request.app.state.metrics.exposition()
    return Response(body, media_type=ctype)
