"""`arklore demo`: the main job on the real data, end to end, with no LLM."""

from __future__ import annotations

import typer

from arklore.cli._common import JsonOpt, console, print_json, progress_bar, workspace
from arklore.cli.corpus import print_counts, print_crosscheck
from arklore.cli.graph import print_build
from arklore.core.model import parse_line_id
from arklore.corpus.store import Store
from arklore.profiles.charfile import ANCHOR, CharProfile
from arklore.profiles.draft import draft_profile
from arklore.rag.context import Relation

DEMO_OPERATOR = "char_002_amiya"
# whose top relations the demo shows: 阿米娅, 陈, 银灰
DEMO_RELATIONS = ("char_002_amiya", "char_010_chen", "char_172_svrash")
# one chat turn's relation block: her anchors plus her view of the person the message names
DEMO_TURN = ("char_002_amiya", "可露希尔最近又在忙什么？")

app = typer.Typer()


@app.command()
def demo(json: JsonOpt = False) -> None:
    """Ingest both sources, cross-check them, resolve speakers, build the relation graph and
    the relation index (no LLM), and show three operators' strongest relations with their
    evidence and one generated profile."""
    ws = workspace()
    ws.roots.require_gamedata()
    ws.roots.require_astr()
    with progress_bar(not json) as progress:
        report = ws.ingest(progress=progress)
        check = ws.corpus.crosscheck(progress=lambda d, t: progress("crosscheck", d, t))
        store = ws.corpus.store()
        top = [(r["name"], r["lines"]) for r in ws.corpus.speakers()[:10]]
        names = ws.names.audit()
        built = ws.graph.build(progress=progress)
        index = ws.rag.build(no_llm=True, progress=progress)
    graph = built.graph
    anchors = {
        op: [_relation(r, store) for r in ws.rag.service().get_anchor_relations(op, 3)]
        for op in DEMO_RELATIONS
    }
    turn = ws.rag.context(*DEMO_TURN)
    profile = _profile_excerpt(ws, graph)
    if json:
        print_json(
            {
                "ingest": report.to_dict(),
                "crosscheck": check.to_dict(),
                "top_speakers": top,
                "names": {k: names[k] for k in ("big_speakers_operators", "big_speakers_npcs")}
                | {"suspects": len(names["suspects"])},
                "graph": built.report,
                "index": index.to_dict(),
                "anchors": anchors,
                "turn": {"operator": DEMO_TURN[0], "message": DEMO_TURN[1]} | turn.to_dict(),
                "profile": profile,
            }
        )
        return
    console.rule("arklore demo: corpus")
    print_counts(report.counts)
    parsed = sum(r.added + r.updated for r in report.sources.values())
    unchanged = sum(r.unchanged for r in report.sources.values())
    console.print(
        f"ingest took {report.seconds:.1f} s ({parsed} stages parsed, {unchanged} unchanged, "
        f"{len(report.errors)} skipped)",
    )
    console.print("top speakers: " + ", ".join(f"{n} {c:,}" for n, c in top))
    console.rule("cross-check of the two sources")
    print_crosscheck(check, 10)
    console.rule("names")
    console.print(
        f"speakers with >= 200 lines: {names['big_speakers_operators']} operators, "
        f"{names['big_speakers_npcs']} NPCs; {len(names['suspects'])} suspects for "
        "`arklore names audit`",
    )
    console.rule("relation graph and relation index (no LLM)")
    print_build(built.report)
    console.print(
        f"relation index: {index.documents} documents "
        f"({', '.join(f'{k} {v}' for k, v in sorted(index.by_source.items()))}), "
        f"{index.seconds:.1f} s [{index.embedder}]",
    )
    for op in DEMO_RELATIONS:
        name = graph.nodes[op].name if op in graph.nodes else op
        console.print(f"{name} ({op}): strongest relations, as a chat receives them")
        for i, a in enumerate(anchors[op], 1):
            console.print(
                f"  {i}. {a['target']}  {a['predicate']}  {a['strength']:.2f}  [{a['source']}]\n"
                f"     {a['text']}\n     evidence: {', '.join(a['stages']) or '-'}",
            )
    console.print(
        f"a chat turn with {DEMO_TURN[0]}: 「{DEMO_TURN[1]}」 -> the relation block "
        f"({turn.tokens} of {turn.budget} tokens):"
    )
    console.print(turn.text)
    for r in turn.contextual:
        console.print(
            f"  ({r.target_name}: {r.source}, evidence {', '.join(r.evidence_line_ids[:2])})"
        )
    console.rule("character profile (no LLM: tasks A and B by their rules)")
    console.print(f"{DEMO_OPERATOR} {profile['name']} (tier {profile['tier']}):")
    for b in profile["anchor"]:
        console.print(f"  锚 {b}")
    for q in profile["quotes"]:
        console.print(f"  「{q['text']}」 —— {q['source_id']}")


def _relation(r: Relation, store: Store) -> dict:
    """One anchor relation with the story codes of the stages its evidence lines are in."""
    stages: list[str] = []
    for lid in r.evidence_line_ids:
        try:
            path = parse_line_id(lid)[0]
        except ValueError:
            continue
        info = store.stage_info(path)
        code = (info.story_code or info.story_name or path) if info else path
        if code not in stages:
            stages.append(code)
    return {
        "target": r.target_name,
        "predicate": r.predicate,
        "strength": r.strength,
        "source": r.source,
        "text": r.text,
        "evidence_line_ids": list(r.evidence_line_ids),
        "stages": stages,
    }


def _profile_excerpt(ws, graph) -> dict:  # noqa: ANN001
    """One generated profile, in memory (nothing written): anchor + 3 quotes with ids."""
    inp = ws.profiles.inputs(ws.names.select([DEMO_OPERATOR]))[0]
    d = draft_profile(
        inp.op, ws.profiles.tables(), story_lines=inp.story, voice=inp.voice, graph=graph
    )
    prof = CharProfile.parse(d.text or "")
    anchor = prof.section(ANCHOR).bullets()[:8] if prof.section(ANCHOR) else []
    quotes = [{"text": q.text, "source_id": q.source_id} for q in prof.quotes()[:3]]
    return {
        "name": inp.name,
        "tier": prof.tier if d.text else "C",
        "anchor": anchor,
        "quotes": quotes,
    }
