"""Interaction statistics from the corpus, no LLM: who talks to whom, and who shares stages.

Read from the primary corpus (dialogue and choice lines only, in stage order):

* **turns** -- two consecutive spoken lines by two different people, with at most
  :data:`MAX_GAP` - 1 non-spoken lines (narration, stickers) between them. Lines in
  *different* options of the same decision are alternatives, not a sequence, and are never
  paired, nor are lines either side of a scene cut (:attr:`arklore.core.model.Line.scene`).
  An unnamed speaker (``？？？``) breaks the chain. Counted for the unordered pair.
* **vocatives** -- a line that calls another person by name (:mod:`arklore.core.vocatives`:
  ``凯尔希，……``, ``……是你吗，凯尔希？``, also with a title: ``凯尔希医生，``): directed,
  speaker -> addressee, each addressee once per line.
* **co_stages** -- stages where both are principal speakers (``stages.principal_speakers``)
  or both speak >= :data:`CO_MIN_LINES` lines.
* **own_stories** -- her own operator records (``obt/memory/story_<her key>_*``) where the
  other speaks >= :data:`OWN_MIN_LINES` lines: directed, from the record's owner. The people
  of the stories written about her define her (赫拉格's 《命途》 is with 临光) however few
  stages they share elsewhere.

People: operators resolve through the alias table, the Doctor to ``npc:博士``, and other
named speakers become NPC nodes only if :class:`Admission` admits them (by default: they speak
>= :data:`NPC_MIN_LINES` lines in the whole corpus; below that they are mostly one-scene
extras: 士兵甲, 路人) and their name is not a generic role (:func:`is_generic_role`: 医疗干员,
萨卡兹雇佣兵, 整合运动成员, 士兵A, ...).

This is evidence that two people *interact*, not of acquaintance or of any relation type.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import combinations

from arklore.core.model import DOCTOR_NAMES
from arklore.core.vocatives import addressed, addressed_forms
from arklore.corpus.order import record_key, record_owner
from arklore.corpus.store import Store
from arklore.graph.people import People

MAX_GAP = 3
CO_MIN_LINES = 5
OWN_MIN_LINES = 2
"""Lines someone speaks in her own record to count as one of its people (one line is an
extra: 阿米娅's single line in 赫拉格's 《命途》)."""
EVIDENCE_CAP = 3
"""Line ids kept as evidence per pair and signal (vocatives, mentions)."""

GENERIC_ROLE_SUFFIXES = (
    "士兵", "干员", "成员", "雇佣兵", "佣兵", "战士", "卫兵", "守卫", "居民", "市民", "村民", "工人",
    "队员", "警员", "感染者", "术师", "学者", "商人", "职员", "护卫", "骑士", "平民", "难民", "孩子",
    "男人", "女人", "路人", "众人", "记者", "士官", "军官", "船员", "乘客", "侍从", "员工", "守卫队",
)  # fmt: skip
MEDIUM_SUFFIXES = ("声音", "日记", "广播")
"""A label for what is heard or read, not for whom: 电话那头的声音 is a different caller in
each story, and 日记 is 白面鸮's own diary."""
_GENERIC_TAIL = re.compile(r"(?:[A-Za-z0-9０-９Ａ-Ｚ]+|[甲乙丙丁戊一二三四五六七八九十]号?)$")


def is_generic_role(name: str) -> bool:
    """A speaker label for a role, not a person: ends with a role noun (医疗干员, 萨卡兹士兵),
    possibly numbered (士兵A, 守卫甲), or names a medium (:data:`MEDIUM_SUFFIXES`)."""
    core = _GENERIC_TAIL.sub("", name.strip()) or name.strip()
    return core.endswith(GENERIC_ROLE_SUFFIXES) or core.endswith(MEDIUM_SUFFIXES)


@dataclass(slots=True)
class ScanLine:
    stage_path: str
    line_no: int
    node: str | None  # speaker's node id (None: unnamed/unknown/ambiguous)
    text: str
    branch: str | None
    line_id: str
    dialogue: bool  # False for a choice line (the Doctor's pick)
    scene: int = 0  # cuts before it in its stage: a turn never crosses one


@dataclass(slots=True)
class PairStats:
    turns: int = 0
    vocatives: int = 0
    co_stages: int = 0
    mentions: int = 0
    voice_mentions: int = 0
    own_stories: int = 0
    evidence: list[str] = field(default_factory=list)  # vocative then mention line ids, capped
    stages: set[str] = field(default_factory=set)  # stages with a turn or a vocative

    def signals(self) -> dict[str, int]:
        out = {
            "turns": self.turns,
            "vocatives": self.vocatives,
            "co_stages": self.co_stages,
            "mentions": self.mentions,
            "voice_mentions": self.voice_mentions,
            "own_stories": self.own_stories,
        }
        return {k: v for k, v in out.items() if v}

    def worth_an_edge(self) -> bool:
        """Enough to create an ``interaction`` edge on its own (not needed for named ones)."""
        return (
            self.turns >= 2
            or self.vocatives >= 1
            or self.mentions >= 1
            or self.voice_mentions >= 1
            or self.co_stages >= 2
            or self.own_stories >= 1
        )


Pairs = dict[tuple[str, str], PairStats]


def load_spoken(
    store: Store,
    people: People,
    *,
    stages: Iterable[str] | None = None,
    counts: Mapping[str, tuple[int, int]] | None = None,
) -> list[ScanLine]:
    """Dialogue and choice lines of the primary corpus (of ``stages`` only, when given) in
    (stage, line_no) order; speakers ``people.admission`` does not admit are nobody.
    ``counts``: the store's :meth:`~Store.speaker_counts`, when the caller holds them
    already."""
    big = people.admission.admitted(store, counts)
    node_of: dict[str, str | None] = {}

    def node(speaker: str, uncertain: bool) -> str | None:
        if uncertain:
            return None
        hit = node_of.get(speaker, "")
        if hit == "":
            nid = people.node(speaker)
            if (
                nid is not None
                and nid.startswith("npc:")
                and speaker.strip() not in DOCTOR_NAMES
                and (speaker not in big or is_generic_role(speaker))
            ):
                nid = None
            node_of[speaker] = hit = nid
        return hit

    return [
        ScanLine(
            ln.stage_path,
            ln.line_no,
            node(ln.speaker, ln.uncertain),
            ln.text,
            ln.branch,
            ln.line_id,
            ln.kind == "dialogue",
            ln.scene,
        )
        for ln in (store.spoken_lines() if stages is None else store.spoken_lines_in(stages))
    ]


def _branches_compatible(a: str | None, b: str | None) -> bool:
    if not a or not b or a == b:
        return True
    da, _, va = a.partition(":")
    db, _, vb = b.partition(":")
    if da != db:
        return True
    return bool(set(va.split(";")) & set(vb.split(";")))


class VocativeFinder:
    """Whom a line calls by name (:func:`arklore.core.vocatives.addressed`): node ids of the
    people known to the scan, honorifics stripped (``凯尔希医生，`` -> Kal'tsit's node)."""

    def __init__(self, people: People, known: set[str]) -> None:
        self.people = people
        self.known = known  # node ids allowed as addressees
        self._cache: dict[str, str | None] = {}

    def __call__(self, text: str) -> list[str]:
        return addressed(text, self._lookup)

    def forms(self, text: str) -> list[tuple[str, str]]:
        """(node id, the form as written: ``凯尔希医生``) of every address in ``text``."""
        return addressed_forms(text, self._lookup)

    def _lookup(self, word: str) -> str | None:
        hit = self._cache.get(word, "")
        if hit == "":
            nid = self.people.node(word)
            hit = self._cache[word] = nid if nid in self.known else None
        return hit


def scan(
    lines: list[ScanLine],
    people: People,
    pairs: Pairs,
    *,
    principal: dict[str, list[str]] | None = None,
    on_line: Callable[[ScanLine, list[str], Pairs], None] | None = None,
    on_turn: Callable[[ScanLine, ScanLine], None] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> None:
    """Add turns, vocatives and co-presence of ``lines`` into ``pairs``.

    ``on_line(line, addressees, pairs)`` is called for each attributed dialogue line
    (the story-mention pass hooks in here so the corpus is walked once); ``on_turn(prev,
    line)`` for each turn counted (the relation evidence keeps its exchanges).
    """
    known = {ln.node for ln in lines if ln.node}
    voc = VocativeFinder(people, known)
    owners = {record_key(n): n for n in sorted(known) if n.startswith("char_")}
    principal = principal or {}

    def get(a: str, b: str) -> PairStats:
        st = pairs.get((a, b))
        if st is None:
            st = pairs[(a, b)] = PairStats()
        return st

    i, n = 0, len(lines)
    done_stages = 0
    while i < n:
        path = lines[i].stage_path
        j = i
        while j < n and lines[j].stage_path == path:
            j += 1
        counts: dict[str, int] = defaultdict(int)
        prev: tuple[ScanLine, str] | None = None  # the previous attributed line, its node
        for ln in lines[i:j]:
            cur = ln.node
            if cur is None:
                prev = None
                continue
            counts[cur] += ln.dialogue
            if prev is not None:
                prev_line, prev_node = prev
                if (
                    prev_node != cur
                    and ln.scene == prev_line.scene
                    and ln.line_no - prev_line.line_no <= MAX_GAP
                    and _branches_compatible(prev_line.branch, ln.branch)
                ):
                    for a, b in ((prev_node, cur), (cur, prev_node)):
                        st = get(a, b)
                        st.turns += 1
                        st.stages.add(path)
                    if on_turn is not None:
                        on_turn(prev_line, ln)
            prev = (ln, cur)
            if ln.dialogue:
                targets = [t for t in voc(ln.text) if t != cur]
                for target in targets:
                    st = get(cur, target)
                    st.vocatives += 1
                    st.stages.add(path)
                    if len(st.evidence) < EVIDENCE_CAP:
                        st.evidence.append(ln.line_id)
                if on_line is not None:
                    on_line(ln, targets, pairs)
        present = {s for s, c in counts.items() if c >= CO_MIN_LINES}
        for name in principal.get(path, []):
            nid = people.node(name)
            if nid in known:
                present.add(nid)
        for a, b in combinations(sorted(present), 2):
            get(a, b).co_stages += 1
            get(b, a).co_stages += 1
        owner = owners.get(record_owner(path) or "")
        if owner is not None:
            for other, c in sorted(counts.items()):
                if other != owner and c >= OWN_MIN_LINES:
                    st = get(owner, other)
                    st.own_stories += 1
                    st.stages.add(path)
        i = j
        done_stages += 1
        if progress is not None and done_stages % 200 == 0:
            progress("interaction", i, n)
    if progress is not None:
        progress("interaction", n, n)
