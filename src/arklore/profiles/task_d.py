"""Task D: her relation documents -> her view of her key people (``## 我·身边的人``).

Input: the relation documents whose subject is her (curated matrix relations with their
descriptions, extracted story relations, evidence-built graph edges; see
:data:`~arklore.profiles.inputs.TASK_D_SOURCES`; not those about the Doctor, task C's), at most
:data:`MAX_DOCS`, each shown with its
document id and the other person's node id. The model writes one first-person sentence per
key person and cites the documents it used. Checked item by item before anything is stored:
the person must be one the documents are about, every cited id must be a given document
about that person, the sentence 10-80 characters, each person once; an item that fails is
dropped and reported. Approved (tier A) and hand-written (S) profiles feed these back to the
relation index as ``char_anchor`` documents, ranked below curated and extracted relations.
No model: skipped.
"""

from __future__ import annotations

from typing import Any

from pydantic import field_validator

from arklore.core.model import DOCTOR
from arklore.llm import ChatRequest
from arklore.llm.shape import Shape
from arklore.profiles.inputs import OperatorInputs
from arklore.profiles.results import FAILED, OK, SKIPPED, TaskResult
from arklore.profiles.rules import check_text
from arklore.rag.docs import RelationDoc

LETTER = "D"
TASK = "distill_d"
PROMPT_VERSION = "distill-d-v2"
MAX_TOKENS = 1200
EXPECTED_OUTPUT_TOKENS = 450
MAX_DOCS = 16
MAX_PEOPLE = 6
VIEW_MIN, VIEW_MAX = 10, 80

SYSTEM_PROMPT = f"""你是角色关系编辑。你会读到关于一名干员人际关系的资料，每条以 [文档编号] 开头，\
写的是这名干员与某人的关系，并给出对方的编号。
请用干员自己的口吻（第一人称“我”）为其中最重要的 1–{MAX_PEOPLE} 个人各写一句话，说出自己怎样看待对方。
规则：
1. 只依据给出的资料，不要编造资料中没有的经历或关系。
2. target 照抄资料中对方的编号（如 char_003_kalts 或 npc:某人）；docs 列出这句话依据的文档编号，至少一个，\
且必须是关于这个人的文档。
3. view 为 {VIEW_MIN}–{VIEW_MAX} 字的一句话。每人只写一次。
只输出 JSON，形如：{{"people": [{{"target": "char_003_kalts", "view": "……", "docs": ["文档编号"]}}]}}"""


class PersonView(Shape):
    target: str
    view: str
    docs: list[str]


class PeopleResponse(Shape):
    people: list[PersonView]

    @field_validator("people")
    @classmethod
    def _people(cls, v: list[PersonView]) -> list[PersonView]:
        if len(v) > 2 * MAX_PEOPLE:
            raise ValueError(f"people: {len(v)} items, at most {2 * MAX_PEOPLE}")
        return v


DOCTOR_NODE = f"npc:{DOCTOR}"
"""Left out: her attitude to the Doctor is task C's (``## 我·关于博士``)."""


def docs_for(inp: OperatorInputs) -> list[RelationDoc]:
    """The documents shown to the model (her view, best first; not about the Doctor)."""
    docs = [d for d in inp.relation_docs if d.target_id not in (d.operator_id, DOCTOR_NODE)]
    return docs[:MAX_DOCS]


def _name(inp: OperatorInputs, node_id: str) -> str:
    node = inp.graph.nodes.get(node_id) if inp.graph is not None else None
    return node.name if node is not None else node_id.removeprefix("npc:")


def build_request(inp: OperatorInputs) -> ChatRequest | None:
    docs = docs_for(inp)
    if not docs:
        return None
    listed = "\n".join(
        f"[{d.doc_id}] 对方：{_name(inp, d.target_id)}（{d.target_id}）｜关系：{d.predicate}"
        f"｜来源：{d.source}\n  {d.text}"
        for d in docs
    )
    body = f"关系资料：\n{listed}\n\n请按要求输出 JSON。"
    return inp.request(TASK, SYSTEM_PROMPT, body, PeopleResponse, MAX_TOKENS, PROMPT_VERSION)


def rule_result(inp: OperatorInputs) -> TaskResult:
    return TaskResult(LETTER, inp.char_id, SKIPPED, "needs a model")


def no_request_result(inp: OperatorInputs) -> TaskResult:
    why = "no relation documents about her"
    if inp.graph is None:
        why += " (no relation graph: run `arklore graph build`)"
    return TaskResult(LETTER, inp.char_id, SKIPPED, why)


def failed_result(inp: OperatorInputs, error: str) -> TaskResult:
    return TaskResult(LETTER, inp.char_id, FAILED, error)


def apply(inp: OperatorInputs, parsed: PeopleResponse, *, model: str) -> TaskResult:
    """Items checked one by one; the failing ones dropped and reported."""
    docs = {d.doc_id: d for d in docs_for(inp)}
    targets = {d.target_id for d in docs.values()}
    people: list[dict[str, Any]] = []
    findings: list[str] = []
    done: set[str] = set()
    for p in parsed.people:
        target = p.target.strip()
        why = ""
        if target not in targets:
            why = f"{target!r} is not a person her documents are about"
        elif target in done:
            why = f"{target} written twice"
        elif not p.docs:
            why = "cites no document"
        else:
            bad = [x for x in p.docs if x not in docs or docs[x].target_id != target]
            if bad:
                why = f"cites {', '.join(bad)}: not a given document about {target}"
        view = ""
        if not why:
            try:
                view = check_text(p.view, "view", min_chars=VIEW_MIN, max_chars=VIEW_MAX, min_cjk=5)
            except ValueError as exc:
                why = str(exc)
        if why:
            findings.append(f"person dropped: {why}")
            continue
        done.add(target)
        people.append(
            {"target": target, "name": _name(inp, target), "view": view, "docs": list(p.docs)}
        )
        if len(people) >= MAX_PEOPLE:
            break
    out = {"people": people, "docs": list(docs)}
    status = OK if people else FAILED
    reason = f"{len(people)} people by {model or 'the model'} from {len(docs)} documents"
    if findings:
        reason += f", {len(findings)} dropped"
    if not people:
        reason = f"no usable person in the answer ({len(findings)} dropped)"
    return TaskResult(
        LETTER, inp.char_id, status, reason, output=out, findings=findings, model=model
    )
