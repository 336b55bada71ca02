"""The lorebook's keys on a held-out message set (``data/lorebook_eval.jsonl``: 324 chat
messages written for this measure, never used to pick a key), under SillyTavern's own keyword
rule (tests/support/sillytavern.py) and the lint's emulation of it: every person of the real
inventory and graph keyed as the export keys her, each message scanned as ``User: message``.

Two modes, as the issue measures them: **keys only** (every person's keys on every message;
the story's others' entries, 鼠王 or PRTS, judged only on a set that labels them, the second)
and **in a chat with her** (the messages written to an operator, ``chat_with``: her card's
relation entries, keyed by her people's names and by the kinship words that mean them for
her). Each prints the false triggers (a share of all firings) and the reach (people mentioned
whose entry fires); keys only leaves out a person a message means by a kinship word alone
(你舅舅: nothing in the world book can tell whose) and prints how many, the chat mode counts
them. The set labels operators only, so the chat mode judges her entries for operators. The
issue's targets are 1% and 95%.

On the held-out set, each run after the keys were tuned on a development set (never in
between): keys only 5.3% false and 76% reached before any; 3.1%, 80% after the first set
(``data/lorebook_dev.jsonl``); 2.0% (4 of 196), 81% after the second (``lorebook_dev2``); 2.0%
(4 of 205) and 90% (201 of 223, 13 mentions by a kinship word alone left to the chat mode;
85% of all 236) after the third (``lorebook_dev3``); 1.9% (4 of 206) and 91% (202 of 223; 86%
of 236) after the fourth (``lorebook_dev4``); 1.9% (4 of 208) and 91% (204 of 223; 86% of 236)
after the fifth (``lorebook_dev5``); 1.4% (3 of 214) and 94.6% (211 of 223; 89.4% of 236)
after the sixth (``lorebook_dev6``; counted as before, with the operator a message is written
to judged too, 1.9%: 4 of 215) and the same after the seventh and the eighth; 1.4% (3 of 213)
and 94.2% (210 of 223) after the rules below that no new set brought, and the same after
a word of the game in traditional script, and after traits of a person. In a chat
6.7% (5 of 75) and 97% after the first two; 6.6% (5 of 76) and 99% (71 of 72) after the third,
the fourth and the fifth; 6.5% (5 of 77) and 100% (72 of 72) after the sixth, the seventh
(whose rules took its own chat-mode false share from 10.7% to 5.4%), the eighth and the rules
below. The reach in a chat meets
the target and is held at it; the other three are held at what was measured, with a margin,
so a change that loses ground fails. The development sets are held at the targets they meet,
else at what they reach.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from support.lorebook_sets import named_mentions
from support.measured import Metrics
from support.sillytavern import Rules, Scan, sillytavern_root
from support.tree_world import make_workspace

from arklore.cards.lint import LintEntry, Matchable, fires, lint

pytestmark = pytest.mark.realdata

HELD_OUT, DEV, DEV2, DEV3, DEV4, DEV5, DEV6, DEV7, DEV8, DEV9, DEV10 = (
    "lorebook_eval.jsonl", "lorebook_dev.jsonl", "lorebook_dev2.jsonl", "lorebook_dev3.jsonl",
    "lorebook_dev4.jsonl", "lorebook_dev5.jsonl", "lorebook_dev6.jsonl", "lorebook_dev7.jsonl",
    "lorebook_dev8.jsonl", "lorebook_dev9.jsonl", "lorebook_dev10.jsonl",
)  # fmt: skip


class Floor(NamedTuple):
    """What a set is held at: keys only (false share of firings, reach) and in a chat."""

    max_false: float
    min_reach: float
    chat_max_false: float
    chat_min_reach: float


FLOORS = {
    HELD_OUT: Floor(0.02, 0.93, 0.075, 0.98),
    DEV: Floor(0.01, 0.95, 0.035, 0.95),
    DEV2: Floor(0.06, 0.95, 0.01, 0.95),
    DEV3: Floor(0.01, 0.93, 0.015, 0.92),
    DEV4: Floor(0.03, 0.91, 0.045, 0.95),
    DEV5: Floor(0.02, 0.91, 0.035, 0.95),
    DEV6: Floor(0.03, 0.87, 0.035, 0.95),
    DEV7: Floor(0.01, 0.94, 0.065, 0.9),
    DEV8: Floor(0.03, 0.95, 0.065, 0.93),
    DEV9: Floor(0.02, 0.89, 0.02, 0.95),
    DEV10: Floor(0.045, 0.9, 0.11, 0.78),
}
"""Per set: the held-out floors above; the development set (``data/lorebook_dev.jsonl``, 430
messages over 144 operators written to tune the keys on: nicknames, word names, shop and
celebrity names, Latin words, kinship in her chat) at the issue's targets where they are met
(keys only 0.0% false, 96% reached; in a chat 98.9% reached) and at what is reached where not
(in a chat 1.1% false: 1 of 92, 管家 keys both of 银灰's retainers, one term of the kinship
table). The second development set (``data/lorebook_dev2.jsonl``, 404 messages over 131
operators, 71 of them the first set does not name, and 10 other people; 174 messages name
nobody) measured the
keys before they changed again (keys only 14.6% false, 89% reached; in a chat 0.0%, 93%) and
after the rules it called for (English words that are codenames, ASCII forms of Latin names,
names two people share, titles, 姓, a measure word, more person markers): keys only 6.5%
false (16 of 245: words no dictionary lists, 霜华, 熔泉, 冰酿; English words typed beside
Chinese, click一下, doc文件) and 94% reached; in a chat 0.0% and 97%; after the third set's
rules, 5.0% (12 of 242) and 96%. The third development set (``data/lorebook_dev3.jsonl``, 488
messages over 164 operators, written by someone who had not read the key rules, the way players
chat: word names mostly bare, 137 traps, 167 messages to 38 operators) measured the keys at
2.5% false and 67% reached keys only (word names 41% reached), 4.5% and 87% in a chat; after
its rules (a foreign name in the dictionary is a name, game talk after a word name or a word
of the game in her clause marks her, an English codename typed in lower case is the word, a
word that alone means the speaker's own is hers with 你 in its clause): 0.7% (2 of 269) and
90%, in a chat 2.6% (3 of 114) and 90%; after the fourth set's, 0.7% and 91%, 3.4% and 93%. The
fourth (``data/lorebook_dev4.jsonl``, 552 messages over 224 operators by another writer who
had read neither: names joined and listed, 147 traps, 196 messages to 58 operators with role
words) measured 5.0% false and 81% reached keys only, 5.1% and 92% in a chat; after its rules
(more game talk, English prepositions, 老爷子, 手下 and 助手 for retainers, a kinship word
before any of her people's names) 3.9% and 85%, 3.5% and 97%; after the fifth set's, 3.8% and
88%. The fifth (``data/lorebook_dev5.jsonl``, 664 messages over 254 operators by a third writer,
as a player community and role-play chats talk) measured 3.2% false and 75% reached keys only
(word names 55%), 6.3% and 95% in a chat; after its rules (a word of the game anywhere in the
message, evaluations after a name, 我家/你家 before a kinship word) 2.5% and 89%, 1.8% and 96%.
The sixth (``data/lorebook_dev6.jsonl``, 575 messages over 209 operators by a fourth writer, as
Bilibili comments, Tieba, QQ groups and role-play chats talk) measured 3.4% false and 75.9%
reached keys only (74.3% before the rule of her people joined to her name), 2.6% and 94.9% in
a chat; after its rules (words about people and more words of the game, 和 after another
word-name, birth order for 小妹) 3.1% and 83.9%. The seventh (``data/lorebook_dev7.jsonl``,
456 messages, 370 of them role-play turns to 78 operators) measured 2.1% and 94.0% keys only,
10.7% and 88.4% in a chat; after its rules (kinship after 是, someone else's said first,
what she calls them in the story) 0.5% and 95.1%, 5.4% and 91.1%. The eighth
(``data/lorebook_dev8.jsonl``, 469 messages: longer role-play turns, group posts naming
several operators, ordinary words next to game talk) measured 5.0% and 95.1% keys only, 6.6%
and 93.4% in a chat; after its data (chat words for the weather, dates and drinks, 艾丽萨,
鲁珀, 学生团, 大侄女) and three labels corrected, 3.3% and 95.2%, 4.6% and 93.5%. Then, from
what all the sets show: a name that is a word set apart by spaces (惊蛰 老婆), 抽 and 练 as game
talk only as a pull and levelling (not 抽烟, 排练), 卡夫卡 and 麦哲伦 keyed as words, a role above
her (队长, 老板) hers only with 你 before it, 姐妹 her sisters only, 我家那个弟弟 the speaker's,
and 22 curated relations (余 and his siblings, 灰毫's 团长, 黑's 老板…): keys only dev6 86.6%
reached, dev8 2.6% false and 95.9%; in a chat more of her people reached (dev7 92.4%, dev8
93.7%) and more false (dev1 3 of 95, dev5 4 of 118, dev8 16 of 254), the new relations firing
where a writer meant one of several (你的管家: 角峰, not 讯使) or a group (你们兄弟姐妹); names
keyed in traditional script too, dev6 86.8%. The ninth (``data/lorebook_dev9.jsonl``, 572
messages, 216 role-play turns to 57 operators, 63 in traditional script) measured 1.7% and
88.7% keys only, 2.5% and 95.2% in a chat; after its rules (a particular form means whom her
description calls so, a form of rank nobody where none says who is second) and three dev7
labels corrected (二姐 is 均, no operator), 1.2% and 95.8% in a chat, dev7 4.3%. Then a word
of the game in traditional script too (這期危機合約全靠夜鶯): keys only dev6 87.3%, dev9 89.8%,
no new false trigger. Then what only a person is, right after a word name (深靛好冷淡, 银灰真
男人, 铃兰也挺可爱), 老婆是 before one, 一个人 and 托我 after, and no mark in a cry with nobody
called (窗外夜莺在叫): keys only dev3 95.3%, dev5 1.2% and 92.7%, dev6 2.2%, dev7 95.1%, dev9
1.4% and 90.6%, 3 false triggers fewer and 10 mentions more over the nine sets; the held-out
set unchanged. The tenth (``data/lorebook_dev10.jsonl``, 597 messages over 205 operators, 217
role-play turns to 60, 57 in traditional script; a writer who read no rule or set, working
from an operator table of 2021, so 令, 黍 and later operators are never labelled) measured
5.8% false and 90.9% reached keys only, 10.1% and 76.7% in a chat (role words the writer
used that her relations do not hold: 你的三个队员 to 灰烬, 你手下那三个团员 to 凛冬); after
its rules (the words that hold a name in both scripts, 夕陽; a Chinese numeral before a
letter, 两W; 配 only as making up, 可颂配咖啡; brands and sayings that hold a name, 雷蛇鼠标,
温蒂汉堡, 凛冬将至, the tarot's 战车正位; a partner a longer word holds joins bare, 凛冬真理;
the curated relations of 彩虹小队) and with the story's others' entries unjudged on a set that
labels operators only (鼠王, PRTS and 整合运动 fired where named: dev8 14 to 11 false, dev10 2
fewer) 3.8% and 90.9%, in a chat 9.8% and 79.1%; dev4 92.3%, dev9 1.1% false. The held-out
set unchanged. Each held at what it reaches, with a margin, or at the target it meets."""
MATCHED_BY_SILLYTAVERN = (HELD_OUT, DEV8, DEV9)
"""Keys only, the sets whose every message SillyTavern's own matchKeys also scans (about 1,350
messages; all nine took a minute more of the suite for the same answer: the two engines agree
on a regex or they do not). In a chat, every set is scanned."""
SETS = pytest.mark.parametrize(
    "name", [DEV, DEV2, DEV3, DEV4, DEV5, DEV6, DEV7, DEV8, DEV9, DEV10, HELD_OUT]
)
TAGS = {
    HELD_OUT: "", DEV: "dev_", DEV2: "dev2_", DEV3: "dev3_", DEV4: "dev4_", DEV5: "dev5_",
    DEV6: "dev6_", DEV7: "dev7_", DEV8: "dev8_", DEV9: "dev9_", DEV10: "dev10_",
}  # fmt: skip


@pytest.fixture(scope="module")
def ws(real_workspace: Any, real_graph_built: Any, rule_profiles: Path) -> Any:
    """The real home with the profiles `arklore build` drafts (her nicknames are in them),
    whatever ran before."""
    s = real_workspace.settings
    w = make_workspace(
        s.home, s.gamedata, s.astr, embedder="hash", tier_c_relations=True, chars_dir=rule_profiles
    )
    yield w
    w.close()


def _records(name: str = HELD_OUT) -> list[dict[str, Any]]:
    text = (resources.files("arklore") / "data" / name).read_text("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@SETS
def test_the_keys_on_the_held_out_messages(ws: Any, metrics: Metrics, name: str) -> None:
    records = _records(name)
    assert len(records) >= 200
    assert len({m["id"] for r in records for m in r["mentions"]}) >= 30
    maker = ws.cards.keymaker()
    entries = [
        LintEntry(pid, pid, Matchable(tuple(ks.keys)))
        for pid, ks in maker.all().items()
        if not ks.empty
    ]
    names_of = {pid: p.names for pid, p in maker.people.items()}
    named, kin_only = named_mentions(records, names_of, ws.cards._person_of)
    # a set that labels operators only (all but the second) cannot judge the story's others'
    # entries: 鼠王, PRTS, 整合运动 fire where a message names them, which no label says
    labels_others = any(m["id"].startswith("npc:") for r in records for m in r["mentions"])
    judges = {e.person: labels_others or maker.people[e.person].operator for e in entries}
    judged = [e for e in entries if judges[e.person]]
    unjudged = [e for e in entries if not judges[e.person]]
    others = sum(1 for r in named for e in unjudged if fires(e.match, r["text"]))
    rep = lint(judged, named, ws.cards._person_of)
    tag = TAGS[name]
    metrics(
        rep.line() + f" [{name}, keys only; {kin_only} mentions by a kinship word alone "
        f"left to the chat mode; {others} firings of others' entries, unjudged]",
        **{
            f"lorebook_{tag}others_fires": others,
            f"lorebook_{tag}kin_only": kin_only,
            f"lorebook_{tag}messages": len(records),
            f"lorebook_{tag}fires": rep.fires,
            f"lorebook_{tag}false": len(rep.false),
            f"lorebook_{tag}false_rate": rep.false_rate,
            f"lorebook_{tag}reached": rep.reached,
            f"lorebook_{tag}mentioned": rep.mentioned,
            f"lorebook_{tag}reach_share": rep.reach,
        },
    )
    assert rep.false_rate <= FLOORS[name].max_false, [(f.person, f.text) for f in rep.false]
    assert rep.reached / rep.mentioned >= FLOORS[name].min_reach, rep.line()
    if name not in MATCHED_BY_SILLYTAVERN:
        return
    # SillyTavern's own matchKeys fires exactly what the emulation fires
    book = [{"uid": e.person, "key": list(e.match.keys), "keysecondary": []} for e in entries]
    texts = [f"User: {r['text']}" for r in records]
    _, by_st = Rules(sillytavern_root(), scans=[Scan(book, [t], 1) for t in texts]).run()
    for text, st in zip(texts, by_st, strict=True):
        assert set(st) == {e.person for e in entries if fires(e.match, text)}, text


@SETS
def test_the_keys_in_a_chat_with_her(ws: Any, metrics: Metrics, name: str) -> None:
    records = [r for r in _records(name) if r.get("chat_with")]
    books: dict[str, list[tuple[str, Matchable]]] = {}
    st_books: dict[str, list[dict[str, Any]]] = {}  # one list per book: sent to node once
    fired = false = mentioned = reached = 0
    scans: list[Scan] = []
    expected: list[set[str]] = []
    for r in records:
        her = r["chat_with"]
        if her not in books:
            books[her] = [
                (e.meta["person"], Matchable(tuple(e.keys)))
                for e in ws.cards.relation_entries(her)
                if not e.meta["person"].startswith("npc:")
            ]
        there = {ws.cards._person_of(m["id"]) for m in r["mentions"]}
        keyed = {p for p, _ in books[her]}
        got = {p for p, m in books[her] if fires(m, r["text"])}
        book = st_books.setdefault(
            her, [{"uid": p, "key": list(m.keys), "keysecondary": []} for p, m in books[her]]
        )
        scans.append(Scan(book, [f"User: {r['text']}"], 1))
        expected.append(got)
        fired += len(got)
        false += len(got - there)
        mentioned += len(there & keyed)
        reached += len(there & keyed & got)
    tag = TAGS[name]
    metrics(
        f"lorebook in a chat with her: {len(records)} messages to {len(books)} operators, "
        f"{fired} firings, {false} false ({false / fired:.1%}); fires for {reached}/{mentioned} "
        f"of her people mentioned ({reached / mentioned:.1%}) [{name}]",
        **{
            f"lorebook_{tag}chat_messages": len(records),
            f"lorebook_{tag}chat_fires": fired,
            f"lorebook_{tag}chat_false": false,
            f"lorebook_{tag}chat_false_rate": false / fired,
            f"lorebook_{tag}chat_reached": reached,
            f"lorebook_{tag}chat_mentioned": mentioned,
            f"lorebook_{tag}chat_reach_share": reached / mentioned,
        },
    )
    floor = FLOORS[name]
    assert false / fired <= floor.chat_max_false and reached / mentioned >= floor.chat_min_reach
    # SillyTavern's own matchKeys fires exactly what the emulation fires, kinship keys included
    _, by_st = Rules(sillytavern_root(), scans=scans).run()
    assert [set(st) for st in by_st] == expected
