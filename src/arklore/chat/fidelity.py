"""The fidelity eval: does what a chat turn injects let a model stay in character?

The labelled set ``data/fidelity_eval.jsonl`` (written for this project, one chat message to
one operator per line, each expectation justified by cited story lines) is scored against
what a turn injects (``Workspace.turn(operator, message).to_dict()``), block by block:

=================  ===========================================================================
kind               passes when
=================  ===========================================================================
relation_named     the message names someone important to her: one of ``expect.relation`` is
                   a ``target_name`` among the ``relations`` block's items
kinship_word       the same, when the message says 舅舅/妹妹/队长... instead of a name
anchor             a message naming nobody: one of ``expect.anchor`` is among the relations
                   block's anchors (items of kind ``anchor``)
doctor             a non-empty block named ``doctor`` citing at least one line id
voice              a block named ``exemplars`` (scenes: her lines among others') citing at
                   least ``exemplars_min`` lines spoken by her (any of her forms; counted by
                   ``line_speaker`` when given, else the lines its items mark ``hers``), every
                   line it marks ``hers`` being hers, one of hers from ``expect.stages`` or
                   the block's text holding one of ``expect.keywords``
memory             the ``memories`` block's stages meet ``expect.stages``
character          the ``persona`` block holds one of ``expect.persona``: who she is and what
                   she is like in the game's own words (her archive), cited by the story
                   lines where she shows it
address            one of ``expect.words`` (the form she uses for the Doctor: 老板, 盟友) is
                   *stated* (:func:`stated`): in the turn's text outside the exemplars block
                   and outside any quoted line
called             the same, for what others call her (陈sir, 小玫)
now                the same, for where she stands now (总辖, 议长)
personality        the same, for what she is like (a word of temperament)
archive            the same, for a fact from the middle of an archive paragraph
noise              none of ``expect.absent`` (lab numbers, 战斗经验, 身高) is anywhere in the
                   turn's text outside the exemplars block
=================  ===========================================================================

The answer mode (:func:`answer`) asks a model each item's ``qa.question`` twice, with the
turn's system prompt and with a bare one-line role-play prompt, and counts the replies that
hold one of the accepted answers: what the injected knowledge is worth to a model.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from arklore.chat.session import chat_request
from arklore.core.blocks import MEMORIES, PERSONA, RELATIONS
from arklore.core.errors import (
    AmbiguousNameError,
    ArkloreError,
    InputFileError,
    LLMError,
    MessageTooLongError,
    OperatorNotAvailableError,
    UnknownNameError,
)
from arklore.core.model import parse_line_id
from arklore.corpus.store import Store
from arklore.llm.types import ChatModel
from arklore.names.facade import NamesFacade

STATED_KINDS: tuple[str, ...] = ("address", "called", "now", "personality", "archive")
KINDS: tuple[str, ...] = (
    "relation_named", "kinship_word", "anchor", "doctor", "voice", "memory", "character",
    *STATED_KINDS, "noise",
)  # fmt: skip
QUOTE_MIN = 8
"""Characters inside 「」 from which a span is a quoted line (her words or somebody's), not a
form or a word the statement names (称博士为「老板」 states 老板)."""
_QUOTED = re.compile(rf"「[^「」]{{{QUOTE_MIN},}}」")
VOICE_CITE = "voice:"
"""A cite of a voice line (``voice:<charWordId>``) instead of a story line id."""
ARCHIVE_CITE = "archive:"
"""A cite of a section of her archive (``archive:<char id>/<section title>``, the source id
the profiles layer's verbatim gate reads)."""
TURN = "*"
"""The block a stated or noise item reads: the whole turn but the exemplars."""
DOCTOR = "doctor"
EXEMPLARS = "exemplars"
"""Blocks the eval already scores before they exist (they score 0 until they land)."""

TurnFn = Callable[[str, str], Mapping[str, Any]]
"""(operator, message) -> the turn as ``Turn.to_dict()``."""
# a turn and one of its blocks, as to_dict() gives them
TurnDict = Mapping[str, Any]
BlockDict = Mapping[str, Any]
Verdict = tuple[bool, str]
LineSpeaker = Callable[[str], "str | None"]
"""line id -> who speaks it: her operator name (base form), or None (no such line, narration,
not an operator). :func:`store_line_speaker` builds one from the store."""
Complete = Callable[[list[dict[str, str]]], str]
"""OpenAI-style messages -> the model's reply text."""

_FIELDS = {"id", "operator", "message", "kind", "expect", "note", "cites", "qa"}
_REQUIRED = ("id", "operator", "message", "kind", "expect", "note", "cites")
_EXPECT: dict[str, tuple[set[str], set[str]]] = {  # kind -> (required keys, optional keys)
    "relation_named": ({"relation"}, set()),
    "kinship_word": ({"relation"}, set()),
    "anchor": ({"anchor"}, set()),
    "doctor": ({"doctor"}, set()),
    "voice": ({"exemplars_min", "stages"}, {"keywords"}),
    "memory": ({"stages"}, set()),
    "character": ({"persona"}, set()),
    **{kind: ({"words"}, set()) for kind in STATED_KINDS},
    "noise": ({"absent"}, set()),
}
_ITEM_ERRORS = (
    UnknownNameError,
    AmbiguousNameError,
    OperatorNotAvailableError,
    MessageTooLongError,
)
"""What a turn may raise for one item (a name, a message): the item fails, the run goes on.
Anything else (no store, no graph) stops the run: it is not the item's fault."""

BARE_PROMPT = "你是《明日方舟》的干员{name}，请以{name}的身份和口吻回答博士。"
"""The one-line role-play prompt the answer mode compares arklore's system prompt with."""


def eval_set_path() -> Path:
    return Path(str(resources.files("arklore") / "data" / "fidelity_eval.jsonl"))


@dataclass(frozen=True, slots=True)
class QA:
    """A question for the answer mode and the strings any of which makes a reply right."""

    question: str
    accept: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Item:
    """One labelled chat message (see the module docstring)."""

    id: str
    operator: str
    message: str
    kind: str
    expect: dict[str, Any]
    note: str
    cites: tuple[str, ...]
    qa: QA | None = None
    line: int = 0  # its line in the file

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "operator": self.operator,
            "message": self.message,
            "kind": self.kind,
            "expect": dict(self.expect),
            "note": self.note,
            "cites": list(self.cites),
        }
        if self.qa is not None:
            out["qa"] = {"question": self.qa.question, "accept": list(self.qa.accept)}
        return out


# -- loading ----------------------------------------------------------------------------------
def load_items(path: str | Path | None = None) -> list[Item]:
    """The labelled set (default: the shipped one), validated; InputFileError naming the first
    bad line (not JSON, a missing or unknown field, a wrong type, an unknown kind, an
    expectation that does not fit its kind, a malformed line id, a repeated id)."""
    p = Path(path) if path is not None else eval_set_path()
    try:
        raw = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ArkloreError(
            f"no fidelity eval set at {p}", hint="pass the path of a fidelity_eval.jsonl"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError(str(p), "file", f"cannot be read: {exc}") from None
    items: list[Item] = []
    seen: dict[str, int] = {}
    for no, text in enumerate(raw.splitlines(), 1):
        if not text.strip():
            continue
        try:
            item = _parse(text, no)
        except ValueError as exc:
            raise InputFileError(str(p), f"line {no}", str(exc)) from None
        if item.id in seen:
            raise InputFileError(
                str(p), f"line {no}", f"id {item.id!r} already used on line {seen[item.id]}"
            )
        seen[item.id] = no
        items.append(item)
    if not items:
        raise InputFileError(str(p), "file", "holds no item")
    return items


def _parse(text: str, no: int) -> Item:
    try:
        rec = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(rec, dict):
        raise ValueError("not a JSON object")
    missing = [k for k in _REQUIRED if k not in rec]
    if missing:
        raise ValueError("missing " + ", ".join(missing))
    unknown = sorted(set(rec) - _FIELDS)
    if unknown:
        raise ValueError("unknown field " + ", ".join(unknown))
    for key in ("id", "operator", "message", "kind", "note"):
        if not isinstance(rec[key], str) or not rec[key].strip():
            raise ValueError(f"{key} must be a non-empty string")
    kind = rec["kind"]
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r} (one of {', '.join(KINDS)})")
    cites = _strings(rec["cites"], "cites")
    for lid in cites:
        if lid.startswith((VOICE_CITE, ARCHIVE_CITE)):
            if not lid.split(":", 1)[1].strip():
                raise ValueError(f"cites: {lid!r} names no voice line or archive section")
            continue
        try:
            parse_line_id(lid)
        except ValueError:
            raise ValueError(
                f"cites: {lid!r} is not a line id (<stage>#<line_no>:<hash8>), a voice line "
                f"({VOICE_CITE}<charWordId>) nor an archive section "
                f"({ARCHIVE_CITE}<char id>/<section title>)"
            ) from None
    return Item(
        rec["id"],
        rec["operator"].strip(),
        rec["message"],
        kind,
        _expect(kind, rec["expect"]),
        rec["note"],
        tuple(cites),
        _qa(rec["qa"]) if "qa" in rec else None,
        no,
    )


def _strings(value: Any, what: str, *, empty: bool = False) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValueError(f"{what} must be a list of non-empty strings")
    if not value and not empty:
        raise ValueError(f"{what} must not be empty")
    return list(value)


def _expect(kind: str, expect: Any) -> dict[str, Any]:
    if not isinstance(expect, dict):
        raise ValueError("expect must be an object")
    required, optional = _EXPECT[kind]
    missing = sorted(required - set(expect))
    unknown = sorted(set(expect) - required - optional)
    if missing:
        raise ValueError(f"expect of a {kind} item needs {', '.join(missing)}")
    if unknown:
        raise ValueError(f"expect of a {kind} item has unknown key {', '.join(unknown)}")
    out = dict(expect)
    for key in ("relation", "anchor", "stages", "persona", "words", "absent"):
        if key in out:
            out[key] = _strings(out[key], f"expect.{key}")
    if "keywords" in out:
        out["keywords"] = _strings(out["keywords"], "expect.keywords", empty=True)
    if kind == "doctor" and out["doctor"] is not True:
        raise ValueError("expect.doctor must be true")
    if kind == "voice":
        n = out["exemplars_min"]
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError("expect.exemplars_min must be an integer >= 1")
    return out


def _qa(value: Any) -> QA:
    if not isinstance(value, dict) or set(value) != {"question", "accept"}:
        raise ValueError("qa must be {'question': text, 'accept': [text, ...]}")
    q = value["question"]
    if not isinstance(q, str) or not q.strip():
        raise ValueError("qa.question must be a non-empty string")
    return QA(q, tuple(_strings(value["accept"], "qa.accept")))


# -- scoring ----------------------------------------------------------------------------------
@dataclass(slots=True)
class ItemResult:
    id: str
    kind: str
    operator: str
    passed: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}


@dataclass(slots=True)
class KindScore:
    n: int = 0
    passed: int = 0

    @property
    def share(self) -> float:
        return self.passed / self.n if self.n else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "passed": self.passed, "share": round(self.share, 4)}


@dataclass(slots=True)
class FidelityReport:
    """Per item pass/fail with the reason, per kind and overall shares."""

    results: list[ItemResult] = field(default_factory=list)
    speakers_checked: bool = True  # voice items checked whose lines the exemplars are

    @property
    def by_kind(self) -> dict[str, KindScore]:
        out: dict[str, KindScore] = {}
        for r in self.results:
            s = out.setdefault(r.kind, KindScore())
            s.n += 1
            s.passed += r.passed
        return {k: out[k] for k in KINDS if k in out}

    @property
    def n(self) -> int:
        return len(self.results)

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def share(self) -> float:
        return self.passed / self.n if self.n else 0.0

    def operators(self) -> list[str]:
        return sorted({r.operator for r in self.results})

    def lines(self) -> list[str]:
        """The figures, one line per kind then overall (what the test suite records)."""
        out = [f"{k:<15} {s.passed:>3}/{s.n:<3} {s.share:6.1%}" for k, s in self.by_kind.items()]
        out.append(f"{'overall':<15} {self.passed:>3}/{self.n:<3} {self.share:6.1%}")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "passed": self.passed,
            "share": round(self.share, 4),
            "operators": len(self.operators()),
            "speakers_checked": self.speakers_checked,
            "by_kind": {k: s.to_dict() for k, s in self.by_kind.items()},
            "items": [r.to_dict() for r in self.results],
        }


def score(
    items: Iterable[Item], turn: TurnFn, line_speaker: LineSpeaker | None = None
) -> FidelityReport:
    """Score each item on the turn ``turn(item.operator, item.message)`` returns (see the
    module docstring). Without ``line_speaker``, voice items do not check whose lines the
    exemplars are (``speakers_checked`` is False in the report)."""
    report = FidelityReport(speakers_checked=line_speaker is not None)
    for item in items:
        try:
            t = turn(item.operator, item.message)
        except _ITEM_ERRORS as exc:
            report.results.append(_result(item, False, f"turn failed: {exc.one_line()}"))
            continue
        report.results.append(_result(item, *_check(item, t, line_speaker)))
    return report


def _check(item: Item, turn: TurnDict, line_speaker: LineSpeaker | None) -> Verdict:
    """The item's check on the block it reads; absent or empty, that block fails it."""
    name, check = _CHECKS[item.kind]
    block = _turn_text(turn) if name == TURN else _block(turn, name)
    why = _empty_why(block, name)
    if why or block is None:
        return False, why or ""
    return check(item, block, turn, line_speaker)


def _turn_text(turn: TurnDict) -> BlockDict:
    """Every block but the exemplars (her lines there state nothing), as one block."""
    texts = [str(b.get("text") or "") for b in turn.get("blocks", ()) if b.get("name") != EXEMPLARS]
    return {"name": TURN, "text": "\n".join(t for t in texts if t)}


def stated(text: str) -> str:
    """``text`` without its quoted lines (「…」 of :data:`QUOTE_MIN` characters or more): what
    it states in its own words, and the forms it names (称博士为「老板」)."""
    return _QUOTED.sub("", text)


def _result(item: Item, ok: bool, reason: str) -> ItemResult:
    return ItemResult(item.id, item.kind, item.operator, ok, reason)


def _block(turn: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    return next((b for b in turn.get("blocks", ()) if b.get("name") == name), None)


def _empty_why(block: Mapping[str, Any] | None, name: str) -> str | None:
    """Why a block cannot pass: absent, or empty with its own reason; None when it has text."""
    if block is None:
        return f"no {name} block in the turn"
    if block.get("empty") or not block.get("text"):
        return f"{name} block empty: {block.get('reason') or 'no reason given'}"
    return None


def _names(values: Sequence[str]) -> str:
    return ", ".join(values) if values else "nobody"


def _check_relation(
    item: Item, block: BlockDict, _turn: TurnDict, _ls: LineSpeaker | None
) -> Verdict:
    got = [str(it.get("target_name")) for it in block.get("items", ())]
    want = item.expect["relation"]
    hit = [w for w in want if w in got]
    if hit:
        return True, f"{hit[0]} among relations"
    return False, f"none of {_names(want)} among relations: {_names(got)}"


def _check_anchor(
    item: Item, block: BlockDict, _turn: TurnDict, _ls: LineSpeaker | None
) -> Verdict:
    got = [
        str(it.get("target_name")) for it in block.get("items", ()) if it.get("kind") == "anchor"
    ]
    want = item.expect["anchor"]
    hit = [w for w in want if w in got]
    if hit:
        return True, f"{hit[0]} among anchors"
    return False, f"none of {_names(want)} among anchors: {_names(got)}"


def _line_ids(block: Mapping[str, Any]) -> list[str]:
    return [str(x) for x in (block.get("sources") or {}).get("line_ids", ())]


def _check_doctor(
    _item: Item, block: BlockDict, _turn: TurnDict, _ls: LineSpeaker | None
) -> Verdict:
    ids = _line_ids(block)
    if not ids:
        return False, "doctor block cites no line"
    return True, f"doctor block cites {len(ids)} line(s)"


def _check_voice(item: Item, block: BlockDict, turn: TurnDict, ls: LineSpeaker | None) -> Verdict:
    ids = list(dict.fromkeys(_line_ids(block)))
    shown_hers = [
        str(ln.get("line_id"))
        for it in block.get("items", ())
        for ln in it.get("lines", ())
        if ln.get("hers")
    ]
    own = list(dict.fromkeys(shown_hers))
    if ls is not None:
        hers = {item.operator, str((turn.get("operator") or {}).get("name") or "")}
        hers.add(str((turn.get("operator") or {}).get("id") or ""))
        wrong = [(lid, ls(lid)) for lid in own if ls(lid) not in hers]
        if wrong:
            lid, who = wrong[0]
            return (
                False,
                f"exemplar {lid} is shown as hers but is not (speaker: {who or 'unknown'})",
            )
        own = [lid for lid in ids if ls(lid) in hers]
    need = item.expect["exemplars_min"]
    if len(own) < need:
        return False, f"exemplars cite {len(own)} line(s) of hers, want at least {need}"
    stages = set(item.expect["stages"])
    on_topic = [lid for lid in own if lid.split("#", 1)[0] in stages]
    words = [w for w in item.expect.get("keywords", ()) if w in str(block.get("text", ""))]
    if not on_topic and not words:
        return False, f"none of {len(own)} lines of hers from the expected stages or with a keyword"
    return True, f"{len(own)} lines of hers, " + (
        f"{len(on_topic)} from the expected stages" if on_topic else f"keyword {words[0]}"
    )


def _check_memory(
    item: Item, block: BlockDict, _turn: TurnDict, _ls: LineSpeaker | None
) -> Verdict:
    got = [str(s.get("path")) for s in (block.get("sources") or {}).get("stages", ())]
    hit = [p for p in got if p in set(item.expect["stages"])]
    if hit:
        return True, f"{hit[0]} among memories"
    return (
        False,
        f"none of {len(item.expect['stages'])} expected stages among memories: {_names(got)}",
    )


def _check_character(
    item: Item, block: BlockDict, _turn: TurnDict, _ls: LineSpeaker | None
) -> Verdict:
    text = str(block.get("text", ""))
    hit = [w for w in item.expect["persona"] if w in text]
    if hit:
        return True, f"persona says {hit[0]}"
    return False, f"persona says none of {_names(item.expect['persona'])}"


def _check_stated(
    item: Item, block: BlockDict, _turn: TurnDict, _ls: LineSpeaker | None
) -> Verdict:
    text = stated(str(block.get("text", "")))
    hit = [w for w in item.expect["words"] if w in text]
    if hit:
        return True, f"the turn states {hit[0]}"
    return False, f"the turn states none of {_names(item.expect['words'])} outside quotes"


def _check_noise(item: Item, block: BlockDict, _turn: TurnDict, _ls: LineSpeaker | None) -> Verdict:
    text = str(block.get("text", ""))
    found = [w for w in item.expect["absent"] if w in text]
    if found:
        return False, f"the turn carries {_names(found)}"
    return True, f"none of {_names(item.expect['absent'])} in the turn"


Check = Callable[[Item, BlockDict, TurnDict, LineSpeaker | None], Verdict]

# item kind -> (the block it reads, its check; the check runs only when that block has text)
_CHECKS: dict[str, tuple[str, Check]] = {
    "relation_named": (RELATIONS, _check_relation),
    "kinship_word": (RELATIONS, _check_relation),
    "anchor": (RELATIONS, _check_anchor),
    "doctor": (DOCTOR, _check_doctor),
    "voice": (EXEMPLARS, _check_voice),
    "memory": (MEMORIES, _check_memory),
    "character": (PERSONA, _check_character),
    **{kind: (TURN, _check_stated) for kind in STATED_KINDS},
    "noise": (TURN, _check_noise),
}


# -- answer mode ------------------------------------------------------------------------------
@dataclass(slots=True)
class AnswerResult:
    id: str
    operator: str
    question: str
    arklore: bool  # the reply with arklore's system prompt holds an accepted answer
    bare: bool  # the reply with the bare one-line prompt does
    arklore_reply: str = ""
    bare_reply: str = ""
    error: str = ""  # a request given up on (that reply counts as wrong)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}


@dataclass(slots=True)
class AnswerReport:
    results: list[AnswerResult] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.results)

    def accuracy(self, which: str) -> float:
        """Share of replies right with ``"arklore"``'s prompt or the ``"bare"`` one."""
        return sum(getattr(r, which) for r in self.results) / self.n if self.n else 0.0

    def lines(self) -> list[str]:
        return [
            f"answers ({self.n} questions): arklore {self.accuracy('arklore'):.1%}, "
            f"bare prompt {self.accuracy('bare'):.1%}"
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "arklore_accuracy": round(self.accuracy("arklore"), 4),
            "bare_accuracy": round(self.accuracy("bare"), 4),
            "errors": sum(bool(r.error) for r in self.results),
            "items": [r.to_dict() for r in self.results],
        }


def is_right(reply: str, accept: Iterable[str]) -> bool:
    """Does ``reply`` hold any accepted answer (case and surrounding spaces ignored)?"""
    text = reply.casefold()
    return any(a.strip().casefold() in text for a in accept if a.strip())


def answer(items: Iterable[Item], turn: TurnFn, complete: Complete) -> AnswerReport:
    """Ask each item's ``qa.question`` (items without one are skipped) with arklore's system
    prompt (``turn(operator, question)["system_prompt"]``) and with :data:`BARE_PROMPT`; a
    request the LLM layer gave up on (LLMError) counts as a wrong reply and is recorded."""
    report = AnswerReport()
    for item in items:
        if item.qa is None:
            continue
        q = item.qa
        res = AnswerResult(item.id, item.operator, q.question, False, False)
        try:
            t = turn(item.operator, q.question)
        except _ITEM_ERRORS as exc:
            res.error = f"turn failed: {exc.one_line()}"
            report.results.append(res)
            continue
        name = str((t.get("operator") or {}).get("name") or item.operator)
        prompts = {"arklore": str(t["system_prompt"]), "bare": BARE_PROMPT.format(name=name)}
        for which, system in prompts.items():
            msgs = [{"role": "system", "content": system}, {"role": "user", "content": q.question}]
            try:
                reply = complete(msgs)
            except LLMError as exc:
                res.error = exc.one_line()
                continue
            setattr(res, f"{which}_reply", reply)
            setattr(res, which, is_right(reply, q.accept))
        report.results.append(res)
    return report


# -- wiring -----------------------------------------------------------------------------------
def store_line_speaker(store: Store, names: NamesFacade) -> LineSpeaker:
    """A :data:`LineSpeaker` over the store the chat reads: the line's speaker resolved by the
    names layer (real names, alternate forms and popup avatars included) to her base form's
    operator name; None for an unknown line id, narration or a speaker who is no operator."""
    lock = threading.Lock()
    seen: dict[str, str | None] = {}

    def who(line_id: str) -> str | None:
        if line_id in seen:
            return seen[line_id]
        with lock:
            row = store.lines_by_id([line_id]).get(line_id)
            cid = names.speaker_ids().get(row[0]) if row else None
            name = names.display_name(names.family(cid)[0]) if cid else None
            seen[line_id] = name
        return name

    return who


def missing_cites(
    items: Iterable[Item], lines_by_id: Callable[[list[str]], Mapping[str, Any]]
) -> list[tuple[str, str]]:
    """(item id, line id) of every cited story line the store does not hold with that content
    hash (``Store.lines_by_id``: a line id carries its hash, so an edited line is missing
    too); voice and archive cites are checked against their tables (:func:`voice_cites`,
    :func:`archive_cites`)."""
    items = list(items)
    story = [
        (it.id, lid)
        for it in items
        for lid in it.cites
        if not lid.startswith((VOICE_CITE, ARCHIVE_CITE))
    ]
    held = lines_by_id(sorted({lid for _, lid in story}))
    return [(iid, lid) for iid, lid in story if lid not in held]


def archive_cites(items: Iterable[Item]) -> list[tuple[str, str, str]]:
    """(item id, operator, source id) of every archive section an item cites."""
    return [
        (it.id, it.operator, lid)
        for it in items
        for lid in it.cites
        if lid.startswith(ARCHIVE_CITE)
    ]


def voice_cites(items: Iterable[Item]) -> list[tuple[str, str, str]]:
    """(item id, operator, charWordId) of every voice line an item cites (``voice:<id>``):
    her voice lines (what she says to the Doctor) state how she addresses him."""
    return [
        (it.id, it.operator, lid.removeprefix(VOICE_CITE))
        for it in items
        for lid in it.cites
        if lid.startswith(VOICE_CITE)
    ]


def chat_completer(llm: ChatModel, *, key: str = "fidelity") -> Complete:
    """A :data:`Complete` through the LLM layer (task ``chat``, its model and endpoint) at
    temperature 0: an eval compares prompts, so the sampling should not add noise."""

    def complete(messages: list[dict[str, str]]) -> str:
        req = replace(chat_request(messages, key=key), temperature=0.0)
        return llm.complete(req).content.strip()

    return complete
