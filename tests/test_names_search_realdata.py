"""Finding people by name on the real data: the graph page's search puts the person with the
exact name first (塔露拉 is an NPC, 露托 an operator whose name merely looks alike), and the
"did you mean" hint only offers names that resolve, never the name asked (Shalem, an
appellation two operators share, is blocked in data/aliases.toml)."""

from __future__ import annotations

import pytest

from arklore.core.errors import UnknownOperatorError

pytestmark = pytest.mark.realdata


def test_search_puts_the_exact_name_first(real_workspace, real_graph_built) -> None:
    found = real_workspace.graph.search("塔露拉", 10)
    assert found[0]["name"] == "塔露拉" and found[0]["matched"] == "exact"
    assert found[0]["kind"] == "npc"
    assert all(r["matched"] != "exact" for r in found[1:])
    assert real_workspace.graph.search("露托", 3)[0]["id"] == "char_4130_luton"


@pytest.mark.parametrize("asked", ["Shalem", "shalem", "SHALEM", "阿米亚", "银灰色", "Amiyah"])
def test_the_hint_offers_only_names_that_resolve(real_workspace, asked: str) -> None:
    names = real_workspace.names
    with pytest.raises(UnknownOperatorError) as err:
        names.resolve(asked)
    hint = err.value.closest
    assert all(h.casefold() != asked.casefold() for h in hint), hint
    for h in hint:
        assert names.aliases().resolve(h).ids, f"{h!r} suggested for {asked!r} does not resolve"


def test_every_portrait_conflict_on_the_real_data_is_settled_or_known(real_workspace) -> None:
    """The alias file settles 林 (her father 鼠王's label: a stranger; data/speakers.toml gives
    his lines to 鼠王 by his picture), 索娜 (焰尾) and 格蕾纳蒂 (灰毫), and the speaker table
    gives 阿 the label 医生 in his own record by his picture. One remains, known: 维什戴尔's
    picture is W's in chapter 14 (the same person)."""
    conflicts = real_workspace.names.audit()["portrait_conflicts"]
    assert {(c["speaker"], c["shown_most_as"]) for c in conflicts} == {("维什戴尔", "W")}
    ids = real_workspace.names.speaker_ids()
    assert "林" not in ids and ids["林雨霞"] == "char_4080_lin"
    assert ids["索娜"] == "char_420_flamtl" and ids["格蕾纳蒂"] == "char_431_ashlok"
