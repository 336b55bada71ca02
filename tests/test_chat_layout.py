"""What a chat app already sends is not sent again (:func:`arklore.chat.layout.unsent`)."""

from __future__ import annotations

from arklore.chat.layout import unsent

DOCTOR_BLOCK = "\n".join(
    [
        "【银灰眼中的博士】",
        "银灰说给博士或说起博士的原话：",
        "- 「届时，我希望能与你再下一局棋，博士。」",
        "- 「盟友，这一局由你先手。」",
        "银灰对博士的称呼：",
        "- 我的盟友",
    ]
)  # invented lines in the doctor block's shape


def test_a_label_whose_lines_the_app_already_sends_goes_with_them() -> None:
    card = "银灰说过的话：\n「届时，我希望能与你再下一局棋，博士。」\n「盟友，这一局由你先手。」"
    text, dropped = unsent(DOCTOR_BLOCK, card)
    assert text == "【银灰眼中的博士】\n银灰对博士的称呼：\n- 我的盟友"
    assert dropped == DOCTOR_BLOCK.split("\n")[2:4]


def test_a_block_whose_every_line_the_app_sends_is_left_out_whole() -> None:
    card = "「届时，我希望能与你再下一局棋，博士。」「盟友，这一局由你先手。」我的盟友……"
    assert unsent(DOCTOR_BLOCK, card)[0] == ""


def test_a_label_with_a_line_left_under_it_stays() -> None:
    text, _ = unsent(DOCTOR_BLOCK, "「盟友，这一局由你先手。」")
    assert text.split("\n")[:3] == [
        "【银灰眼中的博士】",
        "银灰说给博士或说起博士的原话：",
        "- 「届时，我希望能与你再下一局棋，博士。」",
    ]


def test_a_field_the_app_gives_in_longer_words_is_not_sent_again() -> None:
    persona = "【银灰的人设】\n## 锚\n- 矿石病感染情况：非感染者\n- 生日：未公开"
    card = "代号：银灰\n矿石病感染情况：参照医学检测报告，确认为非感染者。\n生日：2月15日\n种族：未公开"
    text, dropped = unsent(persona, card)
    assert dropped == ["- 矿石病感染情况：非感染者"]
    assert text == "【银灰的人设】\n## 锚\n- 生日：未公开"  # another value: said, whatever else is
