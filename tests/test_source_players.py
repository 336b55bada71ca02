"""Stages where the player speaks as somebody other than the Doctor (data/players.toml):
their choices are that person's dialogue lines, the stage's digest carries the entry, and a
malformed table is refused with the file, the entry and the reason. The scripts are
invented; the last test checks the packaged entry on the real data."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from arklore.core.errors import InputFileError
from arklore.core.model import DOCTOR, LineKind
from arklore.sources import _commands, players
from arklore.sources.avg import parse_avg

SP = "activities/act99/level_act99_st01"
SCRIPT = "\n".join([
    '[name="守卫"]队长，我们还要盯着吗？',
    '[Decision(options="不必。;我亲自去。", values="1;2")]',
    '[Predicate(references="1;2")]',
    '[name="守卫"]是！',
])  # fmt: skip


def test_a_choice_is_the_doctors_unless_the_stage_names_the_player(monkeypatch) -> None:
    plain = parse_avg(SCRIPT, SP)
    assert (plain[1].kind, plain[1].speaker) == (LineKind.CHOICE, DOCTOR)
    monkeypatch.setattr(_commands, "players", lambda: {SP: "某人"})
    lines = parse_avg(SCRIPT, SP)
    said = lines[1]
    assert (said.kind, said.speaker, said.text) == (LineKind.DIALOGUE, "某人", "不必。我亲自去。")
    assert [ln.line_no for ln in lines] == [1, 2, 3]  # numbering unchanged
    assert lines[2].branch == plain[2].branch  # the branches the choice opened still hold
    other = parse_avg(SCRIPT, "activities/act99/level_act99_st02")
    assert other[1].speaker == DOCTOR  # only the stage the table names


def test_the_stage_digest_changes_with_its_entry(monkeypatch) -> None:
    data = SCRIPT.encode()
    assert players.stage_digest(data, SP) == hashlib.sha1(data).hexdigest()  # not listed
    monkeypatch.setattr(players, "players", lambda: {SP: "某人"})
    first = players.stage_digest(data, SP)
    monkeypatch.setattr(players, "players", lambda: {SP: "另一人"})
    assert first != players.stage_digest(data, SP) != hashlib.sha1(data).hexdigest()


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ('[[actor]]\nstage = "a"\nspeaker = "b"\nnote = "c"\n', "actor"),
        ('[[player]]\nstage = "a"\nspeaker = ""\nnote = "c"\n', "[[player]] #1 speaker"),
        ('[[player]]\nstage = "a"\nspeaker = "b"\n', "[[player]] #1 note"),
        ('[[player]]\nstage = "a"\nspeaker = "b"\nnote = "c"\nwho = "d"\n', "[[player]] #1"),
        ('[[player]]\nstage = "A"\nspeaker = "b"\nnote = "c"\n'
         '[[player]]\nstage = "a"\nspeaker = "d"\nnote = "e"\n', "[[player]] #2 stage"),
        ("player = 3\n", "player"),
        ("[[player]\n", "toml"),
    ],
)  # fmt: skip
def test_a_malformed_table_names_the_file_the_entry_and_the_reason(
    tmp_path: Path, body: str, where: str
) -> None:
    bad = tmp_path / "players.toml"
    bad.write_text(body, encoding="utf-8")
    with pytest.raises(InputFileError) as err:
        players.load_players(bad)
    assert err.value.path == str(bad) and err.value.where == where


def test_the_packaged_table_reads() -> None:
    table = players.load_players()
    assert table["activities/act13d0/level_act13d0_st04"] == "逻各斯"


@pytest.mark.realdata
def test_logos_speaks_the_choices_of_mudroks_record(real_workspace) -> None:
    """In 泥岩's 《回首》 the player is Logos: his lines are his, and the Doctor says nothing."""
    store = real_workspace.corpus.store()
    lines = store.lines("activities/act13d0/level_act13d0_st04")
    assert not any(ln.speaker == DOCTOR for ln in lines)
    logos = [ln for ln in lines if ln.speaker == "逻各斯"]
    assert any("称我Logos罢" in ln.text for ln in logos) and len(logos) >= 8
    assert real_workspace.names.speaker_ids()["逻各斯"] == real_workspace.names.resolve("Logos")
