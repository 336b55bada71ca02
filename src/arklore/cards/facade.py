"""The cards layer as the workspace uses it: SillyTavern character cards and lorebooks made
from what the layers below know, and the lint of their keys.

* :meth:`CardsFacade.card` — her V3 card (:mod:`arklore.cards.card` says field by field where
  each part comes from); :meth:`CardsFacade.export_cards` writes ``<name>.png`` (the card in
  ``chara`` and ``ccv3`` chunks) and ``<name>.json`` per operator;
* :meth:`CardsFacade.lorebook` — one World Info file of every operator's relations, each entry
  shown only in chats with that operator, any of her forms' cards (``characterFilter``);
* :meth:`CardsFacade.lint` — the keys of a lorebook run over the names layer's labelled chat
  messages (:mod:`arklore.cards.lint`);
* :meth:`CardsFacade.read` — a card PNG or JSON back as data (what an export wrote, or a card
  from SillyTavern); writing it again gives the same bytes.

Who an entry is about and which names key it: the names layer's alias table (every name,
alias, real name and Latin name of each operator, alternate forms folded into the person) and
the relation graph's other people; :mod:`arklore.cards.keys` makes the keys safe. Relations
follow the chat's tier rule: an operator with no profile (tier C) gets no relation entries
unless ``ARKLORE_TIER_C_RELATIONS=1``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from arklore.base.files import atomic_write_bytes, atomic_write_text
from arklore.cards import png
from arklore.cards.card import (
    MEMORY_CHARS,
    MEMORY_ITEMS_PER_EVENT,
    NOTHING_OF_HERS,
    Built,
    CardInputs,
    MemoryInput,
    RelationInput,
    assemble,
    relation_entry,
)
from arklore.cards.keys import (
    KeyMaker,
    Person,
    key_data,
    kin_key,
    nickname_ok,
    people_from_table,
    topic_key,
)
from arklore.cards.lint import LintEntry, LintReport, Matchable, lint
from arklore.cards.spec import V3_SPEC, BookEntry, card_chunks, dumps, world_info
from arklore.chat.facade import ChatFacade
from arklore.core.blocks import book_title
from arklore.core.errors import ArkloreError, DataNotFoundError, UsageError
from arklore.core.kinship import term_of
from arklore.core.model import DOCTOR
from arklore.corpus.story import StoryView
from arklore.events.facade import EventsFacade
from arklore.events.memories import MemoryItem
from arklore.graph.facade import GraphFacade
from arklore.graph.model import Edge
from arklore.graph.strength import WORTH_DESCRIBING
from arklore.names.evaluation import load_eval_set
from arklore.names.facade import NamesFacade
from arklore.profiles.charfile import SPEECH as SPEECH_SECTION
from arklore.profiles.facade import ProfilesFacade
from arklore.profiles.persona import until as persona_until
from arklore.profiles.speech import called_by, called_forms
from arklore.rag.context import known_at
from arklore.rag.docs import ANCHOR_K
from arklore.rag.facade import RagFacade

MAX_RELATIONS = 30
"""Relation entries per card at most: her anchors, then her other relations worth describing
(strength > 0.6), strongest first."""
MEMORY_ITEMS = 60
"""Memories (or appearances) read per card, in story order."""

Progress = Callable[[str, int, int], None]
_TABLES_WHY = "a card's greeting and voice lines come from"
_UNSAFE_FILE = re.compile(r'[\\/:*?"<>|\x00-\x1f]')


@dataclass
class CardReport:
    """One exported card: where it went and what it left out."""

    char_id: str
    name: str
    png: str
    json: str
    tier: str
    relations: int
    memories: int
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "char_id": self.char_id,
            "name": self.name,
            "png": self.png,
            "json": self.json,
            "tier": self.tier,
            "relations": self.relations,
            "memories": self.memories,
            "skipped": [{"what": w, "why": y} for w, y in self.skipped],
        }


@dataclass
class CardsExport:
    """The cards written, and the operators ``--all`` left out with why (nothing of theirs
    in this data: their card would hold only a name and the setting)."""

    cards: list[CardReport]
    left_out: list[tuple[str, str, str]] = field(default_factory=list)  # (char id, name, why)

    def to_dict(self) -> dict[str, Any]:
        return {
            "cards": [r.to_dict() for r in self.cards],
            "left_out": [{"char_id": c, "name": n, "why": y} for c, n, y in self.left_out],
        }


@dataclass
class LorebookReport:
    path: str
    entries: int
    operators: int
    left_out: list[tuple[str, str]] = field(default_factory=list)  # (operator or pair, why)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "entries": self.entries,
            "operators": self.operators,
            "left_out": [{"what": w, "why": y} for w, y in self.left_out],
        }


@dataclass
class CardFile:
    """A card read back: its V3 data (everything the file holds) and the image it sits on."""

    card: dict[str, Any]
    image: bytes | None  # the PNG without its card chunks (None for a JSON card)
    v2: dict[str, Any] | None = None  # the ``chara`` chunk, when the PNG has one


class CardsFacade:
    """Cards, lorebooks and their lint over the chat layer and the layers below."""

    def __init__(self, chat: ChatFacade, *, font: str | None = None) -> None:
        """The layers below come through ``chat``, and with them the chat's settings and
        rules (the persona's tier decision), so a card never disagrees with the chat it is
        made for."""
        self.chat = chat
        self.names: NamesFacade = chat.names
        self.graph: GraphFacade = chat.graph
        self.rag: RagFacade = chat.rag
        self.events: EventsFacade = chat.events
        self.profiles: ProfilesFacade = chat.profiles
        self.font = font
        self._keys: KeyMaker | None = None

    def reload(self) -> None:
        self._keys = None

    # -- who entries are about ---------------------------------------------------------------
    def people(self) -> list[Person]:
        """Every operator (alternate forms folded, as graph nodes) and every other person of
        the relation graph, with the names each is called by (the Doctor is nobody's entry:
        the chat is with the Doctor)."""
        graph = self.graph.current_or_none()
        out: dict[str, Person] = {}
        for p in people_from_table(self.names.aliases()):
            node = (graph.resolve(p.id) if graph is not None else None) or p.id
            prev = out.get(node)
            names = {*p.names, *self.nicknames(p.id), *key_data().nicknames.get(p.id, ())}
            out[node] = Person(node, tuple(sorted(names | set(prev.names if prev else ()))), True)
        if graph is not None:
            for nid, gnode in sorted(graph.nodes.items()):
                if nid not in out and gnode.kind != "operator" and gnode.name != DOCTOR:
                    out[nid] = Person(nid, (gnode.name,), False)
        return list(out.values())

    def nicknames(self, char_id: str) -> list[str]:
        """What the story's others call her (her profile's ``## 说话方式``: 陈sir, 小玫, 丽兹),
        as names a key may use (:func:`~arklore.cards.keys.nickname_ok`)."""
        return [f for text in self._speech(char_id) for f in called_forms(text) if nickname_ok(f)]

    def _speech(self, char_id: str) -> list[str]:
        """The bodies of her profile's ``## 说话方式``; none without a profile."""
        try:
            sections = self.profiles.persona(char_id).sections
        except ArkloreError:
            return []
        return [s.text for s in sections if s.title == SPEECH_SECTION]

    def _her_calls(self, people: Sequence[str], names: Sequence[str]) -> dict[str, str]:
        """What she (any of ``names``) calls her people in the story, by their profiles'
        ``## 说话方式`` (别人叫歌蕾蒂娅「二队长」（斯卡蒂 9 次）): form -> the one she calls so
        most (a tie: nobody). In her own card's book these key that one, though another
        person is called so too (二队长: 歌蕾蒂娅 for 斯卡蒂)."""
        mine = set(names)
        best: dict[str, tuple[int, str]] = {}
        tied: set[str] = set()
        for pid in people:
            for text in self._speech(pid):
                for form, who in called_by(text).items():
                    n = sum(c for sp, c in who.items() if sp in mine)
                    if not n or not nickname_ok(form):
                        continue
                    if form in best and best[form][0] == n:
                        tied.add(form)
                    elif form not in best or best[form][0] < n:
                        best[form] = (n, pid)
                        tied.discard(form)
        return {f: pid for f, (_, pid) in best.items() if f not in tied}

    def keymaker(self) -> KeyMaker:
        """The key rules for this workspace's people and stage titles (built once: it scans
        the dictionary)."""
        if self._keys is None:
            people = self.people()
            self._keys = KeyMaker(people, self.events.stage_titles(), self.bonds(people))
        return self._keys

    def bonds(self, people: list[Person]) -> dict[str, set[str]]:
        """Each person's people, both ways: the relations her card describes (her anchors
        and every strong one). Joined to one of them, her name is her (夜莺和闪灵)."""
        graph = self.graph.current_or_none()
        if graph is None:
            return {}
        bonds: dict[str, set[str]] = {}
        for p in people:
            for e in _described(graph.ranked(p.id)):
                if e.target != f"npc:{DOCTOR}":
                    bonds.setdefault(p.id, set()).add(e.target)
                    bonds.setdefault(e.target, set()).add(p.id)
        return bonds

    # -- one card ----------------------------------------------------------------------------
    def _relations(
        self, cid: str, notes: list[str], *, kin: bool = False, view: StoryView | None = None
    ) -> list[RelationInput]:
        """Her relation entries' inputs; ``kin``: also keyed by the kinship and role words
        that mean each person for her (her own card's book only: a word like 妹妹 names her
        people only in a chat with her); ``view``: a story point (a relation resting on a
        line after it is left out)."""
        p = self.profiles.persona(cid)
        if not p.relation_context:  # her persona's tier decision
            notes.append(
                "没有 .char 档案（tier C）：按设计不写关系条目（ARKLORE_TIER_C_RELATIONS=1 可打开）"
            )
            return []
        graph = self.graph.current_or_none()
        node = graph.resolve(cid) if graph is not None else None
        if graph is None or node is None:
            notes.append(f"关系图里没有{self.names.display_name(cid)}：没有关系条目")
            return []
        chosen = _described([e for e in graph.ranked(node) if e.target != f"npc:{DOCTOR}"])
        rels = self.rag.service().get_all_relationships_for(node, [e.target for e in chosen])
        km = self.keymaker()
        kin_of = self.graph.kin_words(cid) if kin else {}  # 舅舅, 你的两个妹妹: who for her
        # right before the name of another of her people, a kinship word is about that one
        # (你妹妹崖心 is not her other sister; 你的搭档菲亚梅塔 is not 能天使)
        hers = {r.target_id for r in rels if r.target_id in km.people}
        calls = self._her_calls(sorted(hers), km.people[node].names) if kin else {}
        base = self.names.family(cid)[0]  # her entries' inclusion groups: one per person
        out = []
        for rel in rels:
            r = known_at(rel, view.knows_lines) if view is not None else rel  # at the point
            if r is None or r.target_id not in km.people:
                continue
            ks = km.her_book_keys(r.target_id) if kin else km.keys(r.target_id)
            others = [n for o in sorted(hers - {r.target_id}) for n in km.people[o].names]
            words = [kin_key(w, t, others) for w, t in kin_of.get(r.target_id, ())]
            words += [  # what she herself calls this one in the story (斯卡蒂's 二队长)
                kin_key(f, term, others) if (term := term_of(f)) else km.regex_key(f)
                for f, who in calls.items()
                if who == r.target_id and f not in ks.keys
            ]
            if words:
                ks = replace(ks, keys=list(dict.fromkeys([*ks.keys, *words])))
            out.append(
                RelationInput(r.target_id, r.target_name, r.predicate, r.strength, r.text,
                              r.source, r.doc_id, list(r.evidence_line_ids), ks,
                              self.names.named(r.target_id, r.target_name),
                              _group(base, r.target_id))
            )  # fmt: skip
        return out

    def _memories(
        self, cid: str, notes: list[str], view: StoryView | None = None
    ) -> list[MemoryInput]:
        try:
            mem = self.events.memories(
                cid, None, MEMORY_ITEMS, knows=view.knows if view is not None else None
            )
        except ArkloreError as exc:
            notes.append(f"没有记忆条目：{exc.one_line()}")
            return []
        groups: dict[str, list[MemoryItem]] = {}
        for m in mem.items:
            groups.setdefault(m.event_name or m.story_name or m.stage_path, []).append(m)
        km = self.keymaker()
        out = []
        for event, items in groups.items():
            titles = list(dict.fromkeys(
                t for t in [items[0].event_name, *(m.story_name for m in items)] if t
            ))  # fmt: skip
            mi = MemoryInput(
                event,
                titles,
                [_memory_line(m) for m in items[:MEMORY_ITEMS_PER_EVENT]],
                list(dict.fromkeys(m.stage_path for m in items)),
                list(dict.fromkeys(x for m in items for x in m.line_ids)),
                mem.kind,
            )
            for t in titles:
                why = km.topic_unsafe(t)
                if why:
                    mi.dropped_keys[t] = why
                elif topic_key(t) not in mi.keys:
                    mi.keys.append(topic_key(t))
            out.append(mi)
        return out

    def inputs(self, operator: str, until: str | None = None) -> CardInputs:
        """Everything her card is made from (see :mod:`arklore.cards.card`); ``until``: the
        story point it is set at (what a chat there would not know is left out)."""
        from arklore import __version__

        sp = self.chat.speaker(operator, check_manifest=False)
        cid = sp.char_id
        view = self.chat.layers.story_view(until)
        knows = view.knows if view is not None else None
        notes: list[str] = []
        record = self.names.registry().get(cid) if cid in self.names.registry() else None
        latin = (record.appellation if record is not None else None) or cid
        exemplars = self.chat.exemplars(sp, "", [], knows=knows)
        if exemplars.empty and exemplars.reason:
            notes.append(f"对话示例没有剧情场景（{exemplars.reason}）")
        try:
            standing = self.events.standing(cid, knows)
        except ArkloreError as exc:
            notes.append(f"没有近况：{exc.one_line()}")
            standing = []
        greeting = self.profiles.greeting(cid, knows)
        persona = self.profiles.persona(cid)
        if view is not None:
            persona = persona_until(persona, view.knows_lines)[0]
        return CardInputs(
            char_id=cid,
            name=self.names.unique_name(cid),
            latin=latin,
            persona=persona,
            greeting=greeting,
            exemplars=exemplars,
            voices=self.profiles.voice_lines(cid),
            relations=self._relations(cid, notes, kin=True, view=view),
            memories=self._memories(cid, notes, view),
            notes=notes,
            version=__version__,
            alternates=self.profiles.alternate_greetings(cid, greeting),
            standing=standing,
            called=sp.name,
            until=view.to_dict() if view is not None else None,
        )

    def relation_entries(self, operator: str) -> list[BookEntry]:
        """Her card's relation entries alone (kinship words included), as her card's book
        holds them: what a chat with her fires on, without building the rest of the card."""
        cid = self.names.resolve(operator)
        name = self.names.unique_name(cid)
        rels = self._relations(cid, [], kin=True)
        return [relation_entry(name, r) for r in rels if not r.keys.empty]

    def card(
        self,
        operator: str,
        *,
        earlier: dict[str, Any] | None = None,
        name: str | None = None,
        until: str | None = None,
    ) -> Built:
        """Her V3 card; ``earlier``: a card exported before, whose extension fields arklore
        does not write are kept (card level, and per entry). Without the game's tables
        (``ARKLORE_GAMEDATA``) a DataNotFoundError (exit 2) naming the variable: her greeting
        and voice lines come from them, and a card without them would silently differ."""
        self.profiles.require_tables(_TABLES_WHY)
        keep, keep_entries = _kept_extensions(earlier)
        inp = self.inputs(operator, until)
        inp.name = name or inp.name
        return assemble(inp, keep_extensions=keep, keep_entry_extensions=keep_entries)

    def export_cards(
        self,
        operators: Sequence[str] | None,
        out: Path,
        *,
        progress: Progress | None = None,
        until: str | None = None,
    ) -> CardsExport:
        """``<name>.png`` and ``<name>.json`` in ``out`` per operator (None: every operator a
        chat may use, the manifest applied, but one with nothing of hers in this data:
        :attr:`Built.empty`, left out with why; named, she is written, the report says what
        her card lacks); ``until``: the story point the cards are set at."""
        self.chat.layers.story_view(until)  # an unknown point fails before any file is written
        if operators is None:
            m = self.chat.manifest()
            ops = [o.char_id for o in self.names.select(None) if m is None or m.allows(o.char_id)]
        else:
            ops = list(dict.fromkeys(self.names.resolve(o) for o in operators))
        if not ops:
            raise UsageError("no operator to export", hint="name operators, or pass --all")
        self.profiles.require_tables(_TABLES_WHY)
        out = Path(out)
        if out.exists() and not out.is_dir():
            raise UsageError(f"{out} is a file", hint="--out names the folder the cards go to")
        out.mkdir(parents=True, exist_ok=True)
        done = CardsExport([])
        for i, cid in enumerate(ops):
            name = self.names.unique_name(cid)  # one name per card: SillyTavern's files collide
            stem = _file_stem(name)
            png_path, json_path = out / f"{stem}.png", out / f"{stem}.json"
            built = self.card(cid, earlier=_earlier(json_path, png_path), name=name, until=until)
            if built.empty and operators is None:
                done.left_out.append((cid, name, NOTHING_OF_HERS))
            else:
                done.cards.append(self._write(built, png_path, json_path))
            if progress is not None:
                progress("cards", i + 1, len(ops))
        if not done.cards:
            raise DataNotFoundError(
                f"nothing of any operator in this data ({NOTHING_OF_HERS}): no card written"
            )
        return done

    def _write(self, built: Built, png_path: Path, json_path: Path) -> CardReport:
        """Her card as ``png_path`` and ``json_path`` (each written whole or not at all)."""
        image = self.image(built.card)
        atomic_write_bytes(png_path, write_png(built.card, image))
        atomic_write_text(json_path, dumps(built.card))
        data = built.card["data"]
        kinds = [e["extensions"]["arklore"]["kind"] for e in data["character_book"]["entries"]]
        ark = data["extensions"]["arklore"]
        return CardReport(
            ark["char_id"], data["name"], str(png_path), str(json_path), ark["tier"],
            kinds.count("relation"), len(kinds) - kinds.count("relation"), built.skipped,
        )  # fmt: skip

    def image(self, card: dict[str, Any]) -> bytes:
        """Her card image: her name on a plain background (no game art)."""
        data = card["data"]
        ark = data["extensions"].get("arklore", {})
        cid = ark.get("char_id") or data["name"]
        rec = self.names.registry().get(cid) if cid in self.names.registry() else None
        latin = (rec.appellation if rec is not None else None) or cid
        return png.render_image(data["name"], latin, cid, self.font)

    # -- the World Info file -----------------------------------------------------------------
    def lorebook_entries(
        self, progress: Progress | None = None
    ) -> tuple[list[BookEntry], LorebookReport]:
        """One entry per (operator, person she has a relation with), for every operator a chat
        may use; each shown only in chats with her (``characterFilter``: her name)."""
        m = self.chat.manifest()
        ops = [o.char_id for o in self.names.select(None) if m is None or m.allows(o.char_id)]
        ops = [c for c in ops if self.names.family(c)[0] == c]  # a person once
        entries: list[BookEntry] = []
        report = LorebookReport("", 0, 0)
        for i, cid in enumerate(ops):
            name = self.names.display_name(cid)
            # her cards' names: an alternate form's card is named apart (unique_name), yet she
            # is one person with one set of relations
            forms = list(
                dict.fromkeys([name, *map(self.names.unique_name, self.names.family(cid))])
            )
            notes: list[str] = []
            rels = self._relations(cid, notes)
            mine = 0
            for r in rels:
                if r.keys.empty:
                    report.left_out.append((f"{name}→{r.name}", r.keys.why_empty()))
                    continue
                e = relation_entry(name, r)
                e.characters = forms
                e.meta["operator"] = cid
                entries.append(e)
                mine += 1
            if mine:
                report.operators += 1
            elif notes:
                report.left_out.append((name, notes[0]))
            if progress is not None:
                progress("lorebook", i + 1, len(ops))
        report.entries = len(entries)
        return entries, report

    def export_lorebook(self, out: Path, progress: Progress | None = None) -> LorebookReport:
        entries, report = self.lorebook_entries(progress)
        atomic_write_text(out, dumps(world_info(entries)))
        report.path = str(out)
        return report

    # -- lint ----------------------------------------------------------------------------------
    def lint(
        self, path: Path | None = None, records: Iterable[dict[str, Any]] | None = None
    ) -> LintReport:
        """Every person entry of a lorebook (``path``: a World Info file, a card JSON or PNG;
        None: the lorebook ``export lorebook`` would write) run over the labelled messages
        (default: the names layer's ``data/names_eval.jsonl``)."""
        if path is None:
            book, _ = self.lorebook_entries()
            entries = [
                LintEntry(e.meta["person"], e.comment,
                          Matchable(tuple(e.keys), tuple(e.secondary), e.selective, e.logic,
                                    whole_words=e.whole_words))
                for e in book
            ]  # fmt: skip
        else:
            entries = self._lint_entries(Path(path))
        return lint(entries, records if records is not None else load_eval_set(), self._person_of)

    def _person_of(self, char_id: str) -> str:
        graph = self.graph.current_or_none()
        base = self.names.family(char_id)[0]
        return (graph.resolve(base) if graph is not None else None) or base

    def _lint_entries(self, path: Path) -> list[LintEntry]:
        """The person entries of a file: World Info (``entries`` keyed by uid) or a card's
        book. An entry's person: ``extensions.arklore.person``, else its first key that the
        alias table resolves."""
        if path.suffix.lower() == ".png":
            book = self.read(path).card["data"].get("character_book") or {}
            raw = [(e, Matchable.from_book_entry(e)) for e in book.get("entries") or []]
        else:
            data = _load_json(path)
            if isinstance(data.get("entries"), dict):
                raw = [(e, Matchable.from_world_entry(e)) for e in data["entries"].values()]
            elif isinstance((data.get("data") or {}).get("character_book"), dict):
                book = data["data"]["character_book"]
                raw = [(e, Matchable.from_book_entry(e)) for e in book.get("entries") or []]
            else:
                raise png.CardFileError(
                    f"{path}: neither World Info (an `entries` object) nor a card with a "
                    "character book (`data.character_book`)"
                )
        out = []
        for e, match in raw:
            person = ((e.get("extensions") or {}).get("arklore") or {}).get("person")
            if person is None:
                for k in match.keys:
                    res = self.names.aliases().resolve(k)
                    if res.char_id is not None:
                        person = self._person_of(res.char_id)
                        break
            if person is not None:
                out.append(LintEntry(person, str(e.get("comment") or person), match))
        return out

    # -- reading ---------------------------------------------------------------------------------
    @staticmethod
    def read(path: Path) -> CardFile:
        """A card file back as data: a PNG (``ccv3`` first, else ``chara``) or a card JSON."""
        return read_card(Path(path))


# -- files ----------------------------------------------------------------------------------------


def write_png(card: dict[str, Any], image: bytes) -> bytes:
    """The card in ``image`` as SillyTavern writes it (``chara`` V2, then ``ccv3`` V3)."""
    v2, v3 = card_chunks(card)
    return png.embed(image, v2, v3)


def read_card(path: Path) -> CardFile:
    """A card PNG (``ccv3`` read first, as SillyTavern does) or card JSON, as data."""
    where = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise png.CardFileError(f"{where}: cannot read: {exc.strerror or exc}") from exc
    if raw.startswith(png.SIGNATURE):
        texts = png.card_texts(raw, where)
        v3 = _parse(texts.get(png.V3_KEY) or texts[png.V2_KEY], where)
        v2 = _parse(texts[png.V2_KEY], where) if png.V2_KEY in texts else None
        if v3.get("spec") != V3_SPEC:  # a V2-only card: its data is the card
            v3 = {**v3, "spec": V3_SPEC, "spec_version": "3.0"}
        return CardFile(v3, png.strip_card(raw), v2)
    return CardFile(_load_json(path), None)


def _parse(text: str, where: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise png.CardFileError(f"{where}: the card is not JSON ({exc.msg})") from exc
    if not isinstance(data, dict) or not isinstance(data.get("data"), dict):
        raise png.CardFileError(f"{where}: not a V2/V3 character card (no data object)")
    return data


def _load_json(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise png.CardFileError(f"{path}: no such file") from exc
    except IsADirectoryError as exc:
        raise png.CardFileError(f"{path}: a folder, not a card or World Info file") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise png.CardFileError(f"{path}: cannot read as UTF-8 text") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise png.CardFileError(f"{path}: not JSON ({exc.msg}, line {exc.lineno})") from exc
    if not isinstance(data, dict):
        raise png.CardFileError(f"{path}: not a card or World Info object")
    return data


def _earlier(json_path: Path, png_path: Path) -> dict[str, Any] | None:
    """A card an earlier export left at the target (its JSON, else its PNG); None if none or
    unreadable (it is replaced)."""
    for p in (json_path, png_path):
        if p.is_file():
            try:
                return read_card(p).card
            except ArkloreError:
                continue
    return None


def _kept_extensions(
    earlier: dict[str, Any] | None,
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    if not earlier:
        return {}, {}
    data = earlier.get("data") or {}
    card_ext = dict(data.get("extensions") or {})
    per_entry: dict[str, dict[str, Any]] = {}
    for e in (data.get("character_book") or {}).get("entries") or []:
        ext = dict(e.get("extensions") or {})
        key = (ext.get("arklore") or {}).get("key")
        if key:
            per_entry[key] = ext
    return card_ext, per_entry


def _group(her: str, person: str) -> str:
    """The inclusion group of her entry on ``person`` (ids: no comma, which SillyTavern
    splits group names on)."""
    return f"arklore:{her}→{person}".replace(",", "，")


def _file_stem(name: str) -> str:
    return _UNSAFE_FILE.sub("_", name).strip(" .") or "card"


def _memory_line(m: MemoryItem) -> str:
    """A memory as a lorebook line: where, then her words (a memory) or the game's summary
    of the stage (an appearance), cut at :data:`MEMORY_CHARS`."""
    title = book_title(m.story_name)
    tag = m.avg_tag if m.kind == "appearance" else None
    where = " ".join(x for x in (m.stage_code, title, tag) if x)
    text = m.text if m.kind == "memory" else (m.summary or "")
    text = " ".join(text.split())
    if len(text) > MEMORY_CHARS:
        text = text[: MEMORY_CHARS - 1] + "…"
    return f"- {where}：{text}" if text else f"- {where or m.stage_path}"


__all__ = [
    "CardFile",
    "CardReport",
    "CardsExport",
    "CardsFacade",
    "LorebookReport",
    "read_card",
    "write_png",
]


def _described(ranked: list[Edge]) -> list[Edge]:
    """The relations a card describes, of her ranked ones: her anchors, then every one strong
    enough to describe, at most :data:`MAX_RELATIONS`."""
    chosen = ranked[:ANCHOR_K] + [e for e in ranked[ANCHOR_K:] if e.strength > WORTH_DESCRIBING]
    return chosen[:MAX_RELATIONS]
