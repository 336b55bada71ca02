"""Everything the distillation tasks read about one operator, gathered once per run.

:class:`OperatorInputs` holds plain values only (no store; the parsed tables are shared, for
the anchor check): her structured anchor
(copied from the archive by code), her archive sections with the trust they unlock at, her
voice lines, her story lines, her relation documents and the mention counts of the graph,
and the sources that have nothing for her (``gaps``). Tasks build their prompts and check
their answers from it; the verbatim gate and the anchor check use its sources.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from arklore.core.operators import Operator
from arklore.graph.model import RelationGraph
from arklore.llm import ChatRequest
from arklore.llm.types import Validator
from arklore.profiles.archive import (
    CHARWORD,
    STORY,
    Anchor,
    Gap,
    Tables,
    archive_sections,
    archive_sources,
    structured_anchor,
)
from arklore.profiles.quotes import (
    QuoteSource,
    StoryLine,
    VoiceLine,
    story_sources,
    voice_sources,
)
from arklore.profiles.speech import Fact
from arklore.profiles.temperament import Remark
from arklore.rag.docs import RelationDoc, rank_key

TASK_D_SOURCES = ("matrix", "story", "graph_edge")
"""The relation document sources task D reads (ordered by :func:`arklore.rag.docs.doc_rank`);
``char_anchor`` documents (task D's own output) never."""


@dataclass(frozen=True, slots=True)
class ArchiveSection:
    title: str  # storyTitle: 基础档案, 客观履历, 档案资料一, ...
    unlock: str  # 〔初始〕, 〔信赖≥50〕, 〔精英化2〕
    text: str
    rank: int  # trust needed (0: none), for ordering by trust


@dataclass(slots=True)
class OperatorInputs:
    op: Operator
    anchor: Anchor
    tables: Tables = field(default_factory=Tables, repr=False)  # the source of truth for A
    archive: list[ArchiveSection] = field(default_factory=list)
    voice: list[VoiceLine] = field(default_factory=list)
    voice_unlock: dict[str, tuple[str, int]] = field(default_factory=dict)  # word id -> label
    story: list[StoryLine] = field(default_factory=list)
    relation_docs: list[RelationDoc] = field(default_factory=list)
    graph: RelationGraph | None = None
    gaps: list[Gap] = field(default_factory=list)
    doctor_stages: frozenset[str] = frozenset()  # stages the corpus shows the Doctor in
    display_name: str = ""  # what a chat calls her (可露希尔 for Closure); "" = registry name
    speech: list[Fact] = field(default_factory=list)  # her way of speaking (profiles.speech)
    remarks: list[Remark] = field(default_factory=list)  # others' lines of her (temperament)

    @property
    def char_id(self) -> str:
        return self.op.char_id

    @property
    def name(self) -> str:
        """Her name in her profile and the tasks' prompts: the display name when known."""
        return self.display_name or self.op.name

    @property
    def owners(self) -> set[str]:
        """Whose lines count as hers: her own and, for an alternate form, her base form's."""
        return {self.op.char_id} | ({self.op.base_id} if self.op.base_id else set())

    def quote_sources(self) -> dict[str, QuoteSource]:
        return voice_sources(self.voice) | story_sources(self.story)

    def personality_sources(self) -> dict[str, QuoteSource]:
        """What a ``## 我·性格`` line may cite: her archive's sections
        (``archive:<entry>/<title>``), the lines others say of her (``story:<line_id>``,
        each its speaker's) and her own lines (what she says of herself)."""
        said = story_sources(r.line for r in self.remarks)
        return archive_sources(self.tables, self.char_id) | said | self.quote_sources()

    def request(
        self,
        task: str,
        system: str,
        body: str,
        schema: Validator,
        max_tokens: int,
        prompt_version: str,
    ) -> ChatRequest:
        """A distillation task's request about her: every task heads its user message with
        her name and id and keys the work by her id (one place, so the tasks cannot drift)."""
        user = f"干员：{self.name}（{self.char_id}）\n{body}"
        return ChatRequest(
            task=task,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            key=self.char_id,
            max_tokens=max_tokens,
            prompt_version=prompt_version,
            schema=schema,
        )


def unlock_label(unlock_type: Any, param: Any) -> tuple[str, int]:
    """(label, rank) of an unlock condition: trust (FAVOR) ranks by the trust it needs,
    promotion (AWAKE) after trust 0, everything else is available from the start."""
    kind = str(unlock_type or "DIRECT").upper()
    if kind == "FAVOR":
        n = _first_int(param)
        return f"〔信赖≥{n}〕", n
    if kind == "AWAKE":
        n = _first_int(param)
        return f"〔精英化{n}〕", 0
    return "〔初始〕", 0


def _first_int(param: Any) -> int:
    if isinstance(param, list) and param:
        first = param[0]
        if isinstance(first, dict):
            return int(first.get("valueInt") or 0)
        param = first
    try:
        return int(str(param).split(";")[0])
    except ValueError:
        return 0


def voice_unlocks(charword: Mapping[str, Any] | None) -> dict[str, tuple[str, int]]:
    """charWordId -> (unlock label, rank) for every voice line of the table."""
    out: dict[str, tuple[str, int]] = {}
    for key, w in ((charword or {}).get("charWords") or {}).items():
        if isinstance(w, dict):
            out[str(w.get("charWordId") or key)] = unlock_label(
                w.get("unlockType"), w.get("unlockParam")
            )
    return out


def archive_texts(tables: Tables, char_id: str) -> list[ArchiveSection]:
    """Her archive sections (see :func:`archive_sections`), text of each story joined."""
    out: list[ArchiveSection] = []
    for _entry, _i, sec in archive_sections(tables.handbook_info, char_id):
        for st in sec.get("stories") or []:
            if not isinstance(st, dict) or not isinstance(st.get("storyText"), str):
                continue
            label, rank = unlock_label(st.get("unLockType"), st.get("unLockParam"))
            text = st["storyText"].replace("\r\n", "\n").strip()
            if text:
                out.append(ArchiveSection(str(sec.get("storyTitle") or ""), label, text, rank))
    return out


def rank_docs(docs: Sequence[RelationDoc]) -> list[RelationDoc]:
    """In :func:`arklore.rag.docs.doc_rank` order (curated, extracted, described), stronger
    first; char_anchor (task D's own output) left out."""
    return sorted((d for d in docs if d.source in TASK_D_SOURCES), key=rank_key)


def gaps_for(anchor: Anchor, tables: Tables, *, has_voice: bool, has_story: bool) -> list[Gap]:
    """Every source that has nothing for her: the anchor's, the voice table, the story."""
    gaps = list(anchor.gaps)
    if tables.charword is None:
        gaps.append(Gap(CHARWORD, "voice", "table absent"))
    elif not has_voice:
        gaps.append(Gap(CHARWORD, "voice", "no voice lines"))
    if not has_story:
        gaps.append(Gap(STORY, "story lines", "speaks no attributed dialogue line"))
    return gaps


def gather(
    op: Operator,
    tables: Tables,
    *,
    voice: Sequence[VoiceLine],
    story: Sequence[StoryLine],
    unlocks: Mapping[str, tuple[str, int]] | None = None,
    relation_docs: Sequence[RelationDoc] = (),
    graph: RelationGraph | None = None,
    doctor_stages: frozenset[str] = frozenset(),
) -> OperatorInputs:
    """One operator's inputs, with the ``no source: ...`` gaps of every table
    (``doctor_stages``: the stages where the corpus shows the Doctor present, for task C)."""
    anchor = structured_anchor(op.char_id, tables)
    gaps = gaps_for(anchor, tables, has_voice=bool(voice), has_story=bool(story))
    unlocks = unlocks if unlocks is not None else voice_unlocks(tables.charword)
    return OperatorInputs(
        op=op,
        anchor=anchor,
        tables=tables,
        archive=archive_texts(tables, op.char_id),
        voice=list(voice),
        voice_unlock={v.word_id: unlocks.get(v.word_id, ("〔初始〕", 0)) for v in voice},
        story=list(story),
        relation_docs=rank_docs(relation_docs),
        graph=graph,
        gaps=gaps,
        doctor_stages=doctor_stages,
    )
