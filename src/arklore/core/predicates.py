"""The relation vocabulary, in one place: predicates, their merge families, party kinds and
evidence bases. The extraction prompt, the gates and the graph all read it from here, so a
predicate added or renamed here is added or renamed everywhere.

Why these predicates: kinship is split by closeness (近亲/远亲) because role-play needs
"my uncle" and "a distant cousin" to read differently; work ties are split by shape
(peers 同事, command 上下级, household service 主仆, one-off jobs 委托, temporary alliance
合作, shared fighting 战友) because the stories distinguish them constantly; 相识 catches
"they know each other, nothing more" so that ``other`` stays a true last resort.
"""

from __future__ import annotations

OTHER = "other"

PREDICATES: tuple[tuple[str, str], ...] = (
    ("近亲", "血缘或婚姻上的近亲：父母子女、兄弟姐妹、祖孙、叔伯姑姨舅与侄甥"),
    ("远亲", "较远的亲属：堂表亲、远房亲戚、同一家族或氏族但关系疏远"),
    ("恋人", "恋人、伴侣或配偶（含过去的）"),
    ("监护", "主语抚养或监护宾语（养父母、监护人），无血缘"),
    ("师徒", "主语是宾语的老师、师父或导师"),
    ("上下级", "主语是宾语在同一组织中的上级、指挥官或领导"),
    ("主仆", "主语是宾语的主人或雇主，宾语为仆从、侍卫、管家"),
    ("同事", "同一组织中的平级同事"),
    ("战友", "曾并肩作战、同一小队出生入死"),
    ("合作", "为同一目标暂时合作或结盟，不属同一组织"),
    ("委托", "主语委托或雇佣宾语完成某事（一次性的交易关系）"),
    ("朋友", "私交良好的朋友"),
    ("相识", "彼此认识，但看不出更具体的关系"),
    ("恩人", "主语对宾语有重大恩情：救命、收留、关键帮助"),
    ("竞争", "竞争对手，但并非敌对"),
    ("敌对", "敌人、仇人、彼此对立交战"),
    (OTHER, "以上都不合适时的最后选择；须在 note 中写明关系"),
)
"""Ordered (name, meaning) pairs; the order is the order the prompt lists them."""

PREDICATE_NAMES: tuple[str, ...] = tuple(name for name, _ in PREDICATES)

PREDICATE_FAMILY: dict[str, str] = {
    "近亲": "kinship_close",
    "远亲": "kinship_far",
    "恋人": "romance",
    "监护": "guardianship",
    "师徒": "mentorship",
    "上下级": "command",
    "主仆": "service",
    "同事": "work",
    "战友": "comradeship",
    "合作": "cooperation",
    "委托": "commission",
    "朋友": "friendship",
    "相识": "acquaintance",
    "恩人": "benefaction",
    "竞争": "rivalry",
    "敌对": "hostility",
    OTHER: "other",
}
"""Predicate -> family the graph merges by (one family per predicate for now)."""

BOND_ORDER: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("kin", ("近亲",)),
    ("partner", ("恋人",)),
    ("guardian", ("监护", "师徒")),
    ("superior", ("上下级", "主仆", "战友")),
    ("friend", ("朋友", "远亲", "恩人")),
    ("peer", ("同事", "合作", "竞争", "敌对")),
    ("acquaintance", ("委托", "相识", OTHER)),
)
"""Kinds of bond, the ones that define a person first: who she is family to, whom she loves,
who raised or taught her, whom she commands, serves or fights beside, her friends, her peers
and rivals, then people she merely knows. Her anchors (:meth:`arklore.graph.model.RelationGraph.
anchors`) are ranked by it among relations of equal standing; a ``other`` relation takes the
kind its description names (:mod:`arklore.core.kinship`). Anything else (``interaction``)
ranks after all of them, at :data:`CONTACT_RANK`."""

BOND_RANK: dict[str, int] = {p: i for i, (_, preds) in enumerate(BOND_ORDER) for p in preds}
CONTACT_RANK = len(BOND_ORDER)


def bond_rank(predicate: str) -> int:
    """The kind of bond a predicate names, 0 (kin) first; :data:`CONTACT_RANK` for anything
    that is not a predicate (``interaction``)."""
    return BOND_RANK.get(predicate, CONTACT_RANK)


DIRECTED: frozenset[str] = frozenset({"监护", "师徒", "上下级", "主仆", "委托", "恩人"})
"""Predicates whose meaning depends on which party is the subject."""

KINDS: tuple[str, ...] = ("character", "court_seat", "role", "unknown_speaker")
"""Party kinds: a named person; an office whose holder changes; a functional title; a
speaker the script leaves unnamed (？？？)."""

BASES: tuple[str, ...] = ("direct", "reported", "inferred")
"""Evidence bases, strongest first: the two interact or one states it to the other;
someone else tells it; read between the lines."""

BASIS_RANK: dict[str, int] = {"direct": 2, "reported": 1, "inferred": 0}


def is_predicate(name: object) -> bool:
    """True for a whitelisted predicate name (exact match, no mapping)."""
    return isinstance(name, str) and name in PREDICATE_FAMILY


def is_directed(name: str) -> bool:
    return name in DIRECTED


def weakest(bases: list[str]) -> str:
    """The weakest basis of several: one reported line makes the whole claim reported."""
    if not bases:
        raise ValueError("no bases")
    return min(bases, key=BASIS_RANK.__getitem__)
