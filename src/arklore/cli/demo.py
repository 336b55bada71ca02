"""`arklore demo`: the main job on the real data, end to end, with no LLM."""

from __future__ import annotations

from arklore.cli._common import JsonOpt, console, print_json, progress_bar, workspace
from arklore.cli.app import app
from arklore.cli.corpus import print_counts, print_crosscheck
from arklore.cli.graph import print_build
from arklore.names.audit import audit
from arklore.profiles.charfile import ANCHOR, CharProfile
from arklore.profiles.draft import draft_profile

DEMO_OPERATOR = "char_002_amiya"


@app.command()
def demo(json: JsonOpt = False) -> None:
    """Ingest both sources, cross-check them, resolve speakers, build the relation graph
    (no LLM) and show one operator's strongest relations."""
    ws = workspace()
    ws.roots.require_gamedata()
    ws.roots.require_astr()
    with progress_bar(not json) as progress:
        report = ws.ingest(progress=progress)
        check = ws.crosscheck(progress=lambda d, t: progress("crosscheck", d, t))
        store = ws.store()
        top = [(name, n) for name, n, *_ in store.speaker_rows()[:10]]
        names = audit(store, ws.user_aliases())
        built = ws.build_graph(progress=progress)
    graph = built.graph
    anchors = [
        {
            "target": graph.nodes[e.target].name if e.target in graph.nodes else e.target,
            "predicate": e.predicate,
            "strength": e.strength,
            "origins": e.origins,
        }
        for e in graph.get_top_anchor_relations(DEMO_OPERATOR, 3)
    ]
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
                "anchors": {DEMO_OPERATOR: anchors},
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
        highlight=False,
    )
    console.print("top speakers: " + ", ".join(f"{n} {c:,}" for n, c in top), highlight=False)
    console.rule("cross-check of the two sources")
    print_crosscheck(check, 10)
    console.rule("names")
    console.print(
        f"speakers with >= 200 lines: {names['big_speakers_operators']} operators, "
        f"{names['big_speakers_npcs']} NPCs; {len(names['suspects'])} suspects for "
        "`arklore names audit`",
        highlight=False,
    )
    console.rule("relation graph (no LLM)")
    print_build(built.report)
    console.print(f"{DEMO_OPERATOR} 阿米娅's strongest relations:", highlight=False)
    for i, a in enumerate(anchors, 1):
        console.print(
            f"  {i}. {a['target']}  {a['predicate']}  {a['strength']:.3f}  {a['origins']}",
            highlight=False,
            markup=False,
        )
    console.rule("character profile (no LLM: tasks A and B by their rules)")
    console.print(f"{DEMO_OPERATOR} {profile['name']} (tier {profile['tier']}):", highlight=False)
    for b in profile["anchor"]:
        console.print(f"  锚 {b}", highlight=False, markup=False)
    for q in profile["quotes"]:
        console.print(f"  「{q['text']}」 —— {q['source_id']}", highlight=False, markup=False)


def _profile_excerpt(ws, graph) -> dict:  # noqa: ANN001
    """One generated profile, in memory (nothing written): anchor + 3 quotes with ids."""
    inp = ws.profile_inputs(ws.select_operators([DEMO_OPERATOR]))[0]
    d = draft_profile(
        inp.op, ws.profile_tables(), story_lines=inp.story, voice=inp.voice, graph=graph
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
