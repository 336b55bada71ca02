"""The names layer as the workspace uses it: who an operator is, what she is called, which of
her forms exist, and which names a text mentions.

Every entry point resolves an operator here, so there is one rule for a name (the alias table,
then an operator id), one "did you mean" (:meth:`NamesFacade.closest`), one set of her forms
(:meth:`NamesFacade.family`) and one display name (:meth:`NamesFacade.display_name`).

Handles are read from the store on first use and kept until :meth:`NamesFacade.reload` (after
an ingest); the user alias file is read once per reload, so an edit applies at the next one.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict
from difflib import get_close_matches
from pathlib import Path
from typing import Any

from arklore.core.errors import AmbiguousNameError, UnknownOperatorError
from arklore.core.operators import PROFESSION_NAMES, Alias, Operator
from arklore.core.text import check_message
from arklore.corpus.store import Store
from arklore.names import build as names_db
from arklore.names.aliases import (
    DISPLAY,
    STRANGER_SOURCE,
    AliasTable,
    default_alias_path,
    fold,
    load_user_aliases,
)
from arklore.names.audit import audit
from arklore.names.matcher import Mention, MentionContext, MentionMatcher
from arklore.names.portraits import char_number, is_descriptor, portrait_number
from arklore.names.registry import Registry

CLOSEST = 5
"""How many names a "did you mean" offers."""

_CJK = re.compile(r"[\u3400-\u9fff]")

ALTERNATE = "异格"
"""What the game calls an alternate form: the distinction of a form no profession tells apart."""


def says_who(written: str, name: str) -> bool:
    """Whether a name as written (a speaker label, a mention) says who it is: it holds her
    display name (陈晖洁 is 陈) or is part of it (小黑 is 罗小黑); the one test of
    :meth:`NamesFacade.who_is` and :meth:`NamesFacade.glossary`."""
    return name in written or written in name


class NamesFacade:
    """Operators, aliases, mentions and forms over one store (see the module doc)."""

    def __init__(
        self,
        store: Callable[[], Store],
        *,
        alias_file: Path | None = None,
        max_message_chars: int = 8000,
        corpus_version: Callable[[], str] | None = None,
    ) -> None:
        self._store = store
        self._corpus_version = corpus_version  # what the corpus holds (corpus facade)
        self.alias_file = alias_file
        self.max_message_chars = max_message_chars
        self._lock = threading.Lock()
        self.reload()

    def reload(self) -> None:
        """Forget everything read from the store and the user file."""
        self._user: list[Alias] | None = None
        self._table: AliasTable | None = None
        self._matcher: MentionMatcher | None = None
        self._registry: Registry | None = None
        self._speaker_ids: dict[str, str] | None = None
        self._display: dict[str, str] | None = None
        self._closest_pool: list[str] | None = None
        self._names_of: dict[str, list[str]] | None = None
        self._form_stages: dict[str, frozenset[str]] = {}
        self._story_names: dict[str, str] | None = None
        self._unique: dict[str, str] | None = None

    # -- handles -----------------------------------------------------------------------------
    def user_aliases(self) -> list[Alias]:
        """The user alias file (``ARKLORE_ALIASES``, else the packaged ``data/aliases.toml``)."""
        if self._user is None:
            self._user = load_user_aliases(self.alias_file or default_alias_path())
        return self._user

    def strangers(self) -> frozenset[str]:
        """Speaker labels that are somebody else sharing an operator's name (``[[stranger]]``):
        nobody's lines, and nobody's name where a story line calls or mentions it."""
        return frozenset(a.alias for a in self.user_aliases() if a.source == STRANGER_SOURCE)

    def aliases(self) -> AliasTable:
        """The store's alias table plus the user file: the names every command resolves."""
        if self._table is None:
            self._table = names_db.load_alias_table(self._store(), self.user_aliases())
        return self._table

    def matcher(self) -> MentionMatcher:
        if self._matcher is None:
            self._matcher = MentionMatcher(self.aliases())
        return self._matcher

    def registry(self) -> Registry:
        """The operator registry stored by the last ingest."""
        if self._registry is None:
            self._registry = names_db.stored_registry(self._store())
        return self._registry

    def operators(self) -> list[Operator]:
        """Every operator of the registry, sorted by id."""
        reg = self.registry()
        return [reg.operators[c] for c in sorted(reg.operators)]

    def speaker_ids(self) -> dict[str, str]:
        """Corpus speaker -> operator id (real names, portrait-backed labels, popup avatars)."""
        if self._speaker_ids is None:
            self._speaker_ids = names_db.speaker_ids(self._store())
        return self._speaker_ids

    def state(self) -> str:
        """What every name-derived index depends on (the graph, appearances, her scenes): the
        corpus (its content, not the ingest run: an ingest that changed nothing keeps them),
        the user alias file, and what the names tables were computed with (the registry and
        this layer's rules: :data:`~arklore.names.build.NAME_RULES`); a change means they are
        computed again."""
        user = repr(sorted((a.alias, a.char_id, a.source) for a in self.user_aliases()))
        digest = hashlib.sha256(user.encode()).hexdigest()[:16]
        version = self._corpus_version() if self._corpus_version is not None else ""
        return f"{version}:{digest}:{names_db.stored_fingerprint(self._store())}"

    # -- one rule per question ---------------------------------------------------------------
    def resolve(self, name: str) -> str:
        """Any name the alias table knows (or an operator id) -> the operator id.

        Raises :class:`UnknownOperatorError` with the closest names, or
        :class:`AmbiguousNameError` with every candidate."""
        res = self.aliases().resolve(name)
        if res.ambiguous:
            raise AmbiguousNameError(name, list(res.ids))
        if res.char_id is None:
            raise UnknownOperatorError(
                name, self.closest(name), add_alias=self.add_alias_advice(name)
            )
        return res.char_id

    def add_alias_advice(self, name: str) -> str:
        """How to make ``name`` find an operator: the real alias file and the entry's form."""
        entry = f'the three lines [[alias]], name = "{name}" and id = "char_..."'
        if self.alias_file is not None:
            return f"add {entry} to {self.alias_file}, the file ARKLORE_ALIASES names"
        return (f"add {entry} to a copy of the packaged alias file {default_alias_path()} and "
                "set ARKLORE_ALIASES to the copy")  # fmt: skip

    def closest(self, name: str, n: int = CLOSEST) -> list[str]:
        """Operator names closest to ``name``: display names and appellations that look
        alike, then those that contain it or that it contains. A name that resolves is not
        its own suggestion."""
        pool = self._pool()
        query = name.strip()[:64]
        if not query:
            return []
        near = get_close_matches(query, pool, n=n + 1, cutoff=0.4)
        near += [x for x in pool if (query in x or x in query) and x not in near]
        return [x for x in near if fold(x) != fold(query)][:n]

    def _pool(self) -> list[str]:
        """The names a suggestion may be: only those the alias table resolves (a name a
        user [[block]] removed, like the shared appellation Shalem, would fail in turn)."""
        if self._closest_pool is None:
            names: set[str] = set()
            for op in self.registry():
                names.add(self.display_name(op.char_id))
                names.add(op.name)
                if op.appellation:
                    names.add(op.appellation)
            table = self.aliases()
            self._closest_pool = sorted(x for x in names if table.resolve(x).ids)
        return self._closest_pool

    def resolve_person(self, name: str) -> str | None:
        """A name as written in the story -> operator id: the alias table, then the speaker
        ids (labels like 神秘的女性 that portraits tie to one operator); None for NPCs."""
        return self.aliases().resolve(name).char_id or self.speaker_ids().get(name)

    def family(self, char_id: str) -> list[str]:
        """Her id and every alternate form of the same person, base first."""
        reg = self.registry()
        if char_id not in reg:
            return [char_id]
        fam = reg.family(char_id)
        return fam if char_id in fam else [*fam, char_id]

    def display_name(self, char_id: str) -> str:
        """What a chat calls her: a user alias marked ``display = true``, else the registry
        name, or, when that is Latin (``Closure``), the Chinese name the story gives her
        speaker lines most often (可露希尔)."""
        if self._display is None:
            self._display = self._display_names()
        return self._display.get(char_id) or self.aliases().canonical_name(char_id) or char_id

    def unique_name(self, char_id: str) -> str:
        """A readable name that names her alone: her display name when it resolves to her,
        else that name with the in-game distinction of her form, her profession when no other
        operator of that name shares it (阿米娅（近卫）), else 异格 (暮落（异格）, numbered when
        several forms need it); her char id only when even that is taken.
        :meth:`from_unique_name` reads it back."""
        if self._unique is None:
            self._unique = self._unique_names()
        return self._unique.get(char_id, char_id)

    def from_unique_name(self, name: str) -> str | None:
        """The operator a :meth:`unique_name` names, or None (any other name: :meth:`resolve`)."""
        if self._unique is None:
            self._unique = self._unique_names()
        return next((c for c, n in self._unique.items() if n == name and n != c), None)

    def _unique_names(self) -> dict[str, str]:
        ops = self.operators()
        out: dict[str, str] = {}
        shared: dict[str, list[Operator]] = {}
        for op in ops:
            name = self.display_name(op.char_id)
            if self.aliases().resolve(name).char_id == op.char_id:
                out[op.char_id] = name
            else:
                shared.setdefault(name, []).append(op)
        for name, group in shared.items():
            same = [o for o in ops if self.display_name(o.char_id) == name]
            jobs = [PROFESSION_NAMES.get(o.profession or "") for o in same]
            plain = [
                o for o in group if not jobs[same.index(o)] or jobs.count(jobs[same.index(o)]) > 1
            ]
            for o in group:
                job = jobs[same.index(o)]
                if o not in plain and job:
                    label = job
                else:
                    label = ALTERNATE + (str(plain.index(o) + 1) if len(plain) > 1 else "")
                out[o.char_id] = f"{name}（{label}）"
        taken: dict[str, int] = {}
        for n in out.values():
            taken[n] = taken.get(n, 0) + 1
        table = self.aliases()
        for cid, n in out.items():
            other = table.resolve(n).char_id
            if taken[n] > 1 or (other is not None and other != cid):
                out[cid] = cid
        return out

    def story_name(self, char_id: str) -> str | None:
        """The name the story mostly calls her by where it does not say who she is (灵知 is
        诺希斯 in 风雪过境, 伺夜 is 莱昂图索, 贝洛内 is 德米特里): her most-spoken label when it
        carries more of her lines than all her labels that hold her display name; else None."""
        names = self._story_names
        if names is None:  # computed outside the lock: it reads handles that take it
            names = self._most_spoken_names()
            with self._lock:
                self._story_names = names
        return names.get(self.family(char_id)[0])

    def _most_spoken_names(self) -> dict[str, str]:
        counts = self._store().speaker_counts()
        labels: dict[str, list[tuple[int, str]]] = {}
        for speaker, cid in self.speaker_ids().items():
            if not speaker.endswith(("？", "?")):
                n = counts.get(speaker, (0, 0))[0]
                labels.setdefault(self.family(cid)[0], []).append((n, speaker))
        out: dict[str, str] = {}
        for base, spoken in labels.items():
            shown = self.display_name(base)
            own = sum(n for n, sp in spoken if says_who(sp, shown))
            n, top = max(spoken)
            if n > own and not says_who(top, shown) and not is_descriptor(top):
                out[base] = top
        return out

    def named(self, char_id: str, name: str | None = None) -> str:
        """Her name as a chat block heads a line about her: ``name`` (default her display
        name), with the name the story mostly calls her by (:meth:`story_name`) after it --
        灵知（诺希斯）, so the model ties the code name to the scenes' speaker."""
        shown = name or self.display_name(char_id)
        story = self.story_name(char_id)
        return f"{shown}（{story}）" if story else shown

    def _display_names(self) -> dict[str, str]:
        reg = self.registry()
        out = {op.char_id: op.name for op in reg}
        shown: set[str] = set()
        latin = {c for c, n in out.items() if not _CJK.search(n)}
        if latin:
            counts = self._store().speaker_counts()
            best: dict[str, tuple[int, str]] = {}
            for speaker, cid in self.speaker_ids().items():
                if cid in latin and _CJK.search(speaker) and not speaker.endswith(("？", "?")):
                    n = counts.get(speaker, (0, 0))[0]
                    if n > best.get(cid, (0, ""))[0]:
                        best[cid] = (n, speaker.strip())
            for cid, (_, speaker) in best.items():
                out[cid] = speaker
        for a in self.user_aliases():  # the user's word wins (first entry per operator)
            if (a.evidence or {}).get(DISPLAY) and a.char_id in out and a.char_id not in shown:
                out[a.char_id] = a.alias
                shown.add(a.char_id)
        return out

    def form_stages(self, char_id: str) -> frozenset[str]:
        """The stages that show her in this form: where a line of hers (any label of her
        family) is spoken with this form's portrait on screen (假日威龙陈: 陈 under
        ``avg_1013_spchen``, the holiday event and her own records). Empty for a base form
        and for a form whose number no portrait carries."""
        fam = self.family(char_id)
        number = char_number(char_id)
        if char_id == fam[0] or number is None:
            return frozenset()
        with self._lock:
            hit = self._form_stages.get(char_id)
        if hit is None:
            labels = self.labels_of(fam)
            hit = frozenset(
                path
                for path, art in self._store().speaker_stage_portraits(labels)
                if portrait_number(art) == number
            )
            with self._lock:
                self._form_stages[char_id] = hit
        return hit

    def who_is(self, label: str) -> str | None:
        """Who a story speaker label is, when the label does not say it: the display name of
        the person (her base form) it resolves to -- 恩雅 is 初雪, 神秘的女性 is 凯尔希,
        ``$avatar_cerber`` is 刻俄柏 -- so a scene's lines can be read as hers; None for a
        label that resolves to nobody or already holds her name (陈晖洁 is 陈)."""
        cid = self.speaker_ids().get(label)
        if cid is None:
            return None
        name = self.display_name(self.family(cid)[0])
        return None if says_who(label, name) else name

    def glossary(
        self, labels: Iterable[str], texts: Iterable[str], *, skip: Iterable[str] = ()
    ) -> list[tuple[str, str]]:
        """(name as written, who) for the speaker ``labels`` and the names in ``texts`` that
        do not say who they are (:func:`says_who`: 恩雅 is 初雪, 恩希亚 is 崖心), the people
        of ``skip`` (ids, any form) left out; each name once, in order of first use. An
        operator's code name in a line is not glossed: where a chat shows her under another
        name, the code name is a word of the story (魔王, the crown's title, is not 特蕾西娅)."""
        skipped = {self.family(c)[0] for c in skip}
        out: dict[str, str] = {}
        for label in labels:
            cid = self.speaker_ids().get(label)
            who = self.who_is(label)
            if who is not None and cid is not None and self.family(cid)[0] not in skipped:
                out.setdefault(label, who)
        matcher = self.matcher()
        reg = self.registry()
        for text in texts:
            for m in matcher.find(text):
                if m.char_id is None or self.family(m.char_id)[0] in skipped:
                    continue
                if m.char_id in reg and fold(m.surface) == fold(reg.get(m.char_id).name):
                    continue  # a code name a chat shows otherwise is a word in the story (魔王)
                who = self.display_name(self.family(m.char_id)[0])
                if not says_who(m.surface, who):
                    out.setdefault(m.surface, who)
        return list(out.items())

    def known_as(self, family: Sequence[str]) -> frozenset[str]:
        """Every name she goes by (``family``: her forms, base first): the forms' display
        names, the titles they put before her name (耀骑士临光: a summary that says
        血骑士倒在了耀骑士的怀中 names her), her aliases and her speaker labels."""
        if not family:
            return frozenset()
        base = self.display_name(family[0])
        forms = [self.display_name(c) for c in family]
        titles = [f[: -len(base)] for f in forms if f.endswith(base) and len(f) - len(base) >= 3]
        return frozenset({*forms, *titles, *self.aliases_of(family), *self.labels_of(family)})

    def labels_of(self, char_ids: Iterable[str]) -> list[str]:
        """The story speaker labels that resolve to one of ``char_ids``."""
        wanted = set(char_ids)
        return [sp for sp, cid in self.speaker_ids().items() if cid in wanted]

    def aliases_of(self, char_ids: Iterable[str]) -> list[str]:
        """Every (folded) name the alias table resolves to one of ``char_ids``."""
        with self._lock:
            if self._names_of is None:
                table = self.aliases()
                inv: dict[str, list[str]] = {}
                for key in table.surfaces():
                    ids = table.decided_ids(key)
                    if len(ids) == 1:
                        inv.setdefault(ids[0], []).append(key)
                self._names_of = inv
        return sorted({a for c in char_ids for a in self._names_of.get(c, ())})

    def select(self, names: Sequence[str] | None = None) -> list[Operator]:
        """The operators named (any name or id, in the order given), else all of them."""
        ops = self.operators()
        if not names:
            return ops
        by_id = {o.char_id: o for o in ops}
        wanted = dict.fromkeys(self.resolve(n) for n in names)
        return [by_id[c] for c in wanted if c in by_id]

    def find_mentions(
        self, text: str, context: MentionContext | Mapping[str, Any] | None = None
    ) -> list[Mention]:
        """Operator mentions in ``text`` (MessageTooLongError over the message limit)."""
        check_message(text, self.max_message_chars)
        return self.matcher().find(text, context)

    def mentioned(self, text: str) -> list[str]:
        """The operators ``text`` names (resolved mentions only), in order, once each."""
        check_message(text, self.max_message_chars)
        return mentioned_ids(self.matcher(), text)

    def mentioned_bases(self) -> BaseMentions:
        """text -> the base form of every operator :meth:`mentioned` finds in it, as a
        callable another process can be given (it builds its own matcher from the same alias
        table)."""
        table = self.aliases()
        ids = {c for key in table.surfaces() for c in table.decided_ids(key)}
        return BaseMentions(table, {c: self.family(c)[0] for c in ids}, self.max_message_chars,
                            self.matcher())  # fmt: skip

    def record(self, char_id: str) -> dict[str, Any]:
        """Everything the names layer knows about one operator (``arklore operators show``
        and ``GET /v1/operators/{name}`` show it): the registry fields, her display name,
        forms, aliases and faction, and the corpus speaker names that are her (most lines
        first) with their line count."""
        reg = self.registry()
        fam = self.family(char_id)
        data: dict[str, Any] = asdict(reg.get(char_id)) if char_id in reg else {}
        counts = self._store().speaker_counts()
        spoken = self.labels_of([char_id])
        data |= {
            "id": char_id,
            "char_id": char_id,
            "name": self.display_name(char_id),
            "registry_name": data.get("name"),
            "forms": fam,
            "aliases": self.aliases_of(fam),
            "faction": reg.faction_of(char_id) if char_id in reg else {},
            "speaker_names": sorted(spoken, key=lambda sp: -counts.get(sp, (0, 0))[0]),
            "speaker_lines": sum(counts.get(sp, (0, 0))[0] for sp in spoken),
        }
        return data

    def speakers(self, *, npc_only: bool = False, limit: int | None = None) -> list[dict[str, Any]]:
        """Every corpus speaker with line counts and the operator she is (None: an NPC), most
        lines first; ``npc_only``: only those no operator id matches."""
        ids = self.speaker_ids()
        keys = ("name", "line_count", "stage_count", "avg_lines", "astr_lines")
        rows = [
            dict(zip(keys, r, strict=True)) | {"char_id": ids.get(r[0])}
            for r in self._store().speaker_rows()
            if not (npc_only and r[0] in ids)
        ]
        return rows[:limit] if limit is not None else rows

    def audit(self) -> dict[str, Any]:
        """Big speakers as operator or NPC, and speakers that look like operators but have no
        alias (for a human to settle in the alias file)."""
        return audit(self._store(), self.user_aliases())

    # -- the store's names tables ------------------------------------------------------------
    def count(self, store: Store | None = None) -> int:
        """Operators in the registry (``store``: one being ingested, else the ingested one)."""
        return names_db.operator_count(store or self._store())

    def warnings(self) -> list[str]:
        return names_db.registry_warnings(self._store())

    def stale(self, store: Store, registry: Registry) -> bool:
        """Were the stored names computed from another registry or user alias file? (Then an
        ingest rebuilds them even when no stage changed.)"""
        return names_db.names_stale(store, registry, self.user_aliases())

    def rebuild(self, store: Store, registry: Registry) -> None:
        """Store ``registry`` in ``store`` (being ingested) and recompute aliases and speaker
        ids: the ingest step."""
        names_db.rebuild_names(store, registry, self.user_aliases())
        self.reload()


def mentioned_ids(matcher: MentionMatcher, text: str) -> list[str]:
    """The operators ``text`` names (resolved mentions only), in order, once each."""
    return list(dict.fromkeys(m.char_id for m in matcher.find(text) if m.char_id))


class BaseMentions:
    """:meth:`NamesFacade.mentioned_bases`: text -> the base ids of the operators it names,
    in order. Pickled without its matcher: a worker process builds one from the alias table
    on its first call."""

    def __init__(
        self,
        table: AliasTable,
        base: dict[str, str],
        max_chars: int,
        matcher: MentionMatcher | None = None,
    ) -> None:
        self.table, self.base, self.max_chars = table, base, max_chars
        self._matcher = matcher

    def __call__(self, text: str) -> list[str]:
        check_message(text, self.max_chars)
        if self._matcher is None:
            self._matcher = MentionMatcher(self.table)
        return [self.base.get(c, c) for c in mentioned_ids(self._matcher, text)]

    def __getstate__(self) -> tuple[AliasTable, dict[str, str], int]:
        return self.table, self.base, self.max_chars

    def __setstate__(self, state: tuple[AliasTable, dict[str, str], int]) -> None:
        self.table, self.base, self.max_chars = state
        self._matcher = None
