"""`arklore names audit`: which speakers are operators, and which might be but have no alias.

Every speaker with at least ``BIG_SPEAKER_LINES`` lines is listed as an operator (with the
id and the source that decided) or as an NPC. Speakers without an id are *suspects* for a
human to decide when one of these holds:

* ``portrait``: their portraits lean to one operator (share >= ``SUSPECT_SHARE`` over at
  least ``SUSPECT_LINES`` lines) without reaching the alias thresholds;
* ``contains_name``: the label contains an operator's name of two or more characters
  (审判官艾丽妮 style titles);
* ``ambiguous``: the name resolves to several operators.

A suspect is settled by an entry in ``data/aliases.toml`` (``[[alias]]`` or ``[[block]]``).

**Portrait conflicts** (``portrait_conflicts``, :func:`portrait_conflicts`): a speaker who
resolves to an operator while the picture on screen for her lines is, most of the time, the
picture of another speaker who does not. Either the label is somebody else sharing her
name (林 is 林雨霞's father 鼠王 there: a ``[[stranger]]``), or the other speaker is her
under a name the alias file lacks (索娜 is 焰尾: an ``[[alias]]``).

**Identity links** (``identity_links``), each with its evidence:

* ``archive``: a speaker with at least ``ARCHIVE_SPEAKER_LINES`` lines is a name an
  operator's archive gives in prose (:func:`arklore.names.registry.archive_names`: the name her
  客观履历 opens with, ``本名……``, or the given part of such a full name) -- backed by the
  archive naming her so at least ``ARCHIVE_MIN_MENTIONS`` times, or by at least
  ``RECORD_MIN_LINES`` of the speaker's lines in that operator's own records
  (``obt/memory/story_<her id>_*``). Status ``proposed`` (no operator yet: settle it with an
  ``[[alias]]``), ``applied`` (the speaker is hers), ``conflict`` (another operator's).
  Measured on the real data: every such candidate that already resolved resolved to her or
  her base form; the four proposed were 玛莉娅 -> 瑕光, 特蕾西娅 -> 魔王, 里凯莱 -> 隐现,
  安麦尔 -> 青枳.
* ``same_name`` / ``title_prefix``: forms the registry linked by a names rule
  (:func:`arklore.names.registry.same_person_links`), status ``applied``.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import ahocorasick

from arklore.core.operators import Alias, Operator
from arklore.corpus.order import record_key, record_owner
from arklore.corpus.store import Store
from arklore.names.build import (
    load_alias_table,
    load_operators,
    portrait_stats,
    speaker_ids,
    stored_registry,
)
from arklore.names.registry import SAME_NAME, TITLE_PREFIX

BIG_SPEAKER_LINES = 200
SUSPECT_SHARE = 0.4
SUSPECT_LINES = 10
ARCHIVE_SPEAKER_LINES = 20
ARCHIVE_MIN_MENTIONS = 2
RECORD_MIN_LINES = 10


@dataclass
class Suspect:
    speaker: str
    lines: int
    reasons: list[str]
    candidates: list[str] = field(default_factory=list)


def audit(store: Store, user_aliases: Sequence[Alias] = ()) -> dict[str, Any]:
    table = load_alias_table(store, user_aliases)
    ops = load_operators(store)
    auto = ahocorasick.Automaton()
    for op in ops:
        if len(op.name) >= 2:
            auto.add_word(op.name, (op.name, op.char_id))
    auto.make_automaton()
    portrait = portrait_stats(store)
    ids = speaker_ids(store)
    big, suspects = [], []
    for name, n, *_ in store.speaker_rows():
        cid = ids.get(name)
        res = table.resolve(name)
        if n >= BIG_SPEAKER_LINES:
            big.append(
                {
                    "speaker": name,
                    "lines": n,
                    "status": "operator" if cid else "npc",
                    "char_id": cid,
                    "decided_by": res.source if res.char_id else ("portrait" if cid else None),
                }
            )
        if cid:
            continue
        reasons, cands = [], []
        if res.ambiguous:
            reasons.append("ambiguous")
            cands += list(res.ids)
        p = portrait.get(name)
        if p and not p[3] and p[1] >= SUSPECT_SHARE and p[2] >= SUSPECT_LINES:
            reasons.append(f"portrait {p[0]} share={p[1]} lines={p[2]}")
            cands.append(p[0])
        inner = {cid2 for _, (nm, cid2) in auto.iter(name) if nm != name}
        if inner:
            reasons.append("contains_name")
            cands += sorted(inner)
        if reasons:
            suspects.append(Suspect(name, n, reasons, sorted(set(cands))))
    return {
        "thresholds": {
            "big_speaker_lines": BIG_SPEAKER_LINES,
            "suspect_share": SUSPECT_SHARE,
            "suspect_lines": SUSPECT_LINES,
            "archive_speaker_lines": ARCHIVE_SPEAKER_LINES,
            "archive_min_mentions": ARCHIVE_MIN_MENTIONS,
            "record_min_lines": RECORD_MIN_LINES,
        },
        "identity_links": identity_links(store, ops, ids, table.resolve),
        "big_speakers": big,
        "big_speakers_operators": sum(1 for b in big if b["status"] == "operator"),
        "big_speakers_npcs": sum(1 for b in big if b["status"] == "npc"),
        "suspects": [asdict(s) for s in suspects],
        "portrait_conflicts": portrait_conflicts(store.dialogue_portraits(), ids),
    }


CONFLICT_MIN_LINES = 10
CONFLICT_SHARE = 0.8
"""A speaker's one picture: at least this share of her lines with a picture."""


def _picture(art: str) -> str:
    """The picture of a portrait id, its expression and variant left out
    (``avg_npc_034#4`` -> ``avg_npc_034``)."""
    return re.split(r"[#$]", art, maxsplit=1)[0]


def portrait_conflicts(
    portraits: Iterable[tuple[str, str | None, int]], ids: Mapping[str, str]
) -> list[dict[str, Any]]:
    """Speakers resolved to an operator (``ids``) whose one picture (:data:`CONFLICT_SHARE`
    of at least :data:`CONFLICT_MIN_LINES` lines) is shown more often under one other
    speaker, who resolves to somebody else or to nobody."""
    by_speaker: dict[str, Counter[str]] = defaultdict(Counter)
    by_picture: dict[str, Counter[str]] = defaultdict(Counter)
    for speaker, art, n in portraits:
        if art:
            by_speaker[speaker][_picture(art)] += n
            by_picture[_picture(art)][speaker] += n
    out = []
    for speaker, pictures in sorted(by_speaker.items()):
        cid, total = ids.get(speaker), sum(pictures.values())
        picture, n = pictures.most_common(1)[0]
        if cid is None or total < CONFLICT_MIN_LINES or n < CONFLICT_SHARE * total:
            continue
        users = by_picture[picture]
        other, m = users.most_common(1)[0]
        if other != speaker and ids.get(other) != cid and 2 * m > sum(users.values()):
            out.append({"speaker": speaker, "char_id": cid, "lines": total, "picture": picture,
                        "shown_most_as": other, "other_id": ids.get(other),
                        "other_lines": m})  # fmt: skip
    return out


def identity_links(
    store: Store,
    ops: Sequence[Operator],
    ids: Mapping[str, str],
    resolve: Any,
) -> list[dict[str, Any]]:
    """Speaker <-> operator links the archive and the corpus show, and the forms the registry
    linked by a names rule, each with its evidence (module docstring), proposals first."""
    by_id = {op.char_id: op for op in ops}
    base = {op.char_id: op.base_id or op.char_id for op in ops}
    family_names: dict[str, set[str]] = {}
    for op in ops:
        family_names.setdefault(base[op.char_id], set()).add(op.name)
    out: list[dict[str, Any]] = []
    for op in ops:
        if op.linked_by in (SAME_NAME, TITLE_PREFIX) and op.base_id in by_id:
            b = by_id[op.base_id]
            why = (
                f"both named {op.name}"
                if op.linked_by == SAME_NAME
                else f"{op.name}: a title before the name {b.name}"
            )
            out.append({"status": "applied", "rule": op.linked_by, "speaker": None,
                        "char_id": op.char_id, "name": op.name, "to": b.char_id,
                        "to_name": b.name, "evidence": why})  # fmt: skip
    reg = stored_registry(store)
    counts = store.speaker_counts()
    big = {sp for sp, (n, _) in counts.items() if n >= ARCHIVE_SPEAKER_LINES}
    cands: list[tuple[str, str, dict[str, Any]]] = [
        (found["name"], cid, found)
        for cid, names in sorted(reg.archive_names.items())
        if cid in by_id
        for found in names
        if found["name"] in big
    ]
    records: dict[tuple[str, str], int] = {}
    for path, sp, n in store.speaker_stage_counts(sorted({sp for sp, _, _ in cands})):
        owner = record_owner(path)
        if owner:
            records[(sp, owner)] = records.get((sp, owner), 0) + n
    for sp, cid, found in cands:
        rec = records.get((sp, record_key(cid)), 0)
        if found["mentions"] < ARCHIVE_MIN_MENTIONS and rec < RECORD_MIN_LINES:
            continue
        if sp in family_names[base[cid]]:
            continue  # a form's archive naming her base (假日威龙陈 -> 陈): nothing to link
        now = ids.get(sp) or resolve(sp).char_id
        status = "proposed" if now is None else "conflict"
        if now is not None and base.get(now, now) == base[cid]:
            status = "applied"
        out.append({
            "status": status, "rule": "archive", "speaker": sp, "lines": counts[sp][0],
            "char_id": cid, "name": by_id[cid].name, "to": cid, "to_name": by_id[cid].name,
            "now": now,
            "evidence": (
                f"{by_id[cid].name}'s archive ({found['section']}, {found['how']}) names her "
                f"{found['full']}; {found['mentions']} mention(s) in her archive; "
                f"{rec} line(s) as {sp} in her own records"
            ),
        })  # fmt: skip
    order = {"conflict": 0, "proposed": 1, "applied": 2}
    out.sort(key=lambda x: (order[x["status"]], x["rule"], x["char_id"], x["speaker"] or ""))
    return out
