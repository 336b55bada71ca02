"""Who speaks where the script's label says otherwise (data/speakers.toml): a stage whose
player is somebody else turns its choices into that person's lines, a label several people
use is told apart by the picture on screen, a stage's digest carries the entries that can
apply to it, and a malformed table is refused with the file, the entry and the reason. The
scripts are invented; the last tests check the packaged entries on the real data."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from arklore.core.errors import InputFileError
from arklore.core.model import DOCTOR, LINES_VERSION, LineKind
from arklore.sources import _commands, speakers
from arklore.sources.avg import parse_avg
from arklore.sources.speakers import Speakers

SP = "activities/act99/level_act99_st01"
SCRIPT = "\n".join([
    '[name="守卫"]队长，我们还要盯着吗？',
    '[Decision(options="不必。;我亲自去。", values="1;2")]',
    '[Predicate(references="1;2")]',
    '[name="守卫"]是！',
    '[Character(name="avg_900_doc_1#3$1")]',
    '[name="医生"]窗户都锁好了。',
    '[Character(name="avg_901_quack_1")]',
    '[name="医生"]你的伤不要紧。',
])  # fmt: skip


def test_a_choice_is_the_doctors_unless_the_stage_names_the_player(monkeypatch) -> None:
    plain = parse_avg(SCRIPT, SP)
    assert (plain[1].kind, plain[1].speaker) == (LineKind.CHOICE, DOCTOR)
    monkeypatch.setattr(_commands, "speakers", lambda: Speakers(players={SP: "某人"}))
    lines = parse_avg(SCRIPT, SP)
    said = lines[1]
    assert (said.kind, said.speaker, said.text) == (LineKind.DIALOGUE, "某人", "不必。我亲自去。")
    assert said.speaker_raw is None  # the script wrote no label: none is made up
    dash = '[Decision(options="巫王已逝——;——却还有痴人。", values="1;2")]'
    assert parse_avg(dash, SP)[0].text == "巫王已逝——却还有痴人。"  # one dash where they meet
    assert [ln.line_no for ln in lines] == [ln.line_no for ln in plain]  # numbering unchanged
    assert lines[2].branch == plain[2].branch  # the branches the choice opened still hold
    other = parse_avg(SCRIPT, "activities/act99/level_act99_st02")
    assert other[1].speaker == DOCTOR  # only the stage the table names


def test_a_shared_label_is_told_apart_by_the_picture_on_screen(monkeypatch) -> None:
    plain = parse_avg(SCRIPT, SP)
    assert [ln.speaker for ln in plain[3:]] == ["医生", "医生"]
    table = Speakers(pictures={("医生", "avg_900_doc_1"): "某医生"})
    monkeypatch.setattr(_commands, "speakers", lambda: table)
    lines = parse_avg(SCRIPT, SP)
    # his picture, whatever its expression: his line; the label's raw text is kept
    assert (lines[3].speaker, lines[3].speaker_raw) == ("某医生", "医生")
    assert lines[4].speaker == "医生"  # another picture: the label's usual person
    assert lines[0].speaker == "守卫"


def test_the_stage_digest_carries_the_entries_that_can_apply(monkeypatch) -> None:
    data = SCRIPT.encode()
    bare_prefix = f"lines:{LINES_VERSION}\n".encode()
    bare = hashlib.sha1(bare_prefix + data).hexdigest()
    monkeypatch.setattr(speakers, "speakers", lambda: Speakers())
    assert speakers.stage_digest(data, SP) == bare
    with monkeypatch.context() as m:  # a new way of building lines reads every stage again
        m.setattr(speakers, "LINES_VERSION", LINES_VERSION + 1)
        assert speakers.stage_digest(data, SP) != bare
    monkeypatch.setattr(speakers, "speakers", lambda: Speakers(players={SP: "某人"}))
    first = speakers.stage_digest(data, SP)
    monkeypatch.setattr(speakers, "speakers", lambda: Speakers(players={SP: "另一人"}))
    assert first != speakers.stage_digest(data, SP) != bare
    pic = Speakers(pictures={("医生", "avg_900_doc_1"): "某医生"})
    monkeypatch.setattr(speakers, "speakers", lambda: pic)
    assert speakers.stage_digest(data, SP) != bare  # its bytes hold the label
    other = b'[name="X"]hi'  # without the label: the entry cannot apply
    assert speakers.stage_digest(other, SP) == hashlib.sha1(bare_prefix + other).hexdigest()


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ('[[actor]]\nstage = "a"\nspeaker = "b"\nnote = "c"\n', "actor"),
        ('[[player]]\nstage = "a"\nspeaker = ""\nnote = "c"\n', "[[player]] #1 speaker"),
        ('[[player]]\nstage = "a"\nspeaker = "b"\n', "[[player]] #1 note"),
        ('[[player]]\nstage = "a"\nspeaker = "b"\nnote = "c"\nwho = "d"\n', "[[player]] #1"),
        ('[[player]]\nstage = "A"\nspeaker = "b"\nnote = "c"\n'
         '[[player]]\nstage = "a"\nspeaker = "d"\nnote = "e"\n', "[[player]] #2 stage"),
        ('[[picture]]\nlabel = "a"\nspeaker = "b"\nnote = "c"\n', "[[picture]] #1 picture"),
        ('[[picture]]\nlabel = "a"\npicture = "p_1#2"\nspeaker = "b"\nnote = "c"\n'
         '[[picture]]\nlabel = "a"\npicture = "p_1"\nspeaker = "d"\nnote = "e"\n',
         "[[picture]] #2 picture"),
        ("player = 3\n", "player"),
        ("[[player]\n", "toml"),
    ],
)  # fmt: skip
def test_a_malformed_table_names_the_file_the_entry_and_the_reason(
    tmp_path: Path, body: str, where: str
) -> None:
    bad = tmp_path / "speakers.toml"
    bad.write_text(body, encoding="utf-8")
    with pytest.raises(InputFileError) as err:
        speakers.load_speakers(bad)
    assert err.value.path == str(bad) and err.value.where == where


def test_the_packaged_table_reads() -> None:
    table = speakers.load_speakers()
    assert table.player("activities/act13d0/level_act13d0_st04") == "逻各斯"
    assert table.by_picture("医生", "avg_225_haak_1#7$1") == "阿"
    assert table.by_picture("医生", "avg_4125_rdoc_1#1$1") == "Doc"
    assert table.by_picture("医生", "avg_npc_033") is None  # a nameless doctor: the label


@pytest.mark.realdata
def test_logos_speaks_the_choices_of_mudroks_record(real_workspace) -> None:
    """In 泥岩's 《回首》 the player is Logos: his lines are his, and the Doctor says nothing."""
    store = real_workspace.corpus.store()
    lines = store.lines("activities/act13d0/level_act13d0_st04")
    assert not any(ln.speaker == DOCTOR for ln in lines)
    logos = [ln for ln in lines if ln.speaker == "逻各斯"]
    assert any("称我Logos罢" in ln.text for ln in logos) and len(logos) >= 8
    assert real_workspace.names.speaker_ids()["逻各斯"] == real_workspace.names.resolve("Logos")


@pytest.mark.realdata
def test_a_shared_label_speaks_for_the_person_on_screen(real_workspace) -> None:
    """阿 is 医生 in his own record, and 林 with her father's picture is 鼠王."""
    store = real_workspace.corpus.store()
    record = store.lines("obt/memory/story_haak_1_1")
    assert sum(ln.speaker == "阿" and ln.speaker_raw == "医生" for ln in record) >= 90
    assert not any(ln.speaker == "医生" and "haak" in (ln.figure_art or "") for ln in record)
    father = store.lines("activities/act5d0/level_act5d0_st01")
    assert any(ln.speaker == "鼠王" and ln.speaker_raw == "林" for ln in father)
    assert not any(ln.speaker == "林" and (ln.figure_art or "").startswith("avg_npc_034")
                   for ln in father)  # fmt: skip


@pytest.mark.realdata
def test_the_label_doctor_is_nobodys_but_the_doctor_on_screen(real_workspace) -> None:
    """医生 is R6's Doc with his portrait (now Doc, who resolves to him), and a nameless
    doctor in 微风's record, whose lines are nobody's."""
    store, names = real_workspace.corpus.store(), real_workspace.names
    ids = names.speaker_ids()
    assert "医生" not in ids and ids["Doc"] == "char_4125_rdoc"
    record = store.lines("obt/memory/story_rdoc_1_1")
    assert sum(ln.speaker == "Doc" for ln in record) >= 90
    clinic = store.lines("obt/memory/story_breeze_2_1")
    assert any(ln.speaker == "医生" for ln in clinic) and not any(
        ln.speaker == "Doc" for ln in clinic
    )
