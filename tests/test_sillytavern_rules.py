"""The harness that runs SillyTavern's own rules (tests/support/sillytavern.py) does what
SillyTavern does, on invented cards and entries: the facts its README states hold."""

from __future__ import annotations

from typing import Any

from support.sillytavern import fired, parse_examples, sillytavern_root

NOT_ANY = 2


def _entry(
    uid: int, keys: list[str], secondary: tuple[str, ...] = (), logic: int = 0
) -> dict[str, Any]:
    return {"uid": uid, "key": keys, "keysecondary": list(secondary), "selective": True,
            "selectiveLogic": logic}  # fmt: skip


def test_a_not_any_blocker_anywhere_kills_the_entry_and_a_lookaround_does_not() -> None:
    root = sillytavern_root()
    blocked = _entry(1, ["汐"], ("汐阳",), NOT_ANY)
    looked = _entry(2, ["/汐(?!阳)/"])
    said = ["User: 我和汐去看汐阳了"]
    assert fired(root, [blocked, looked], said) == [2]
    assert fired(root, [blocked, looked], ["User: 汐阳真好看"]) == []


def test_a_plain_key_is_a_case_insensitive_substring_and_scan_depth_counts_messages() -> None:
    root = sillytavern_root()
    entry = _entry(7, ["Wolf"])
    assert fired(root, [entry], ["User: the wolfpack"]) == [7]
    assert fired(root, [entry], ["User: hi", "Char: hi", "User: wolf"], depth=2) == []


def test_another_speakers_line_is_folded_into_her_message() -> None:
    root = sillytavern_root()
    text = "<START>\n{{user}}: 你好\n{{char}}: 你好呀\n老船长: 别偷懒\n{{char}}: 知道啦"
    (block,) = parse_examples(root, text, "博士", "测绘员")
    assert [m["name"] for m in block] == ["example_user", "example_assistant"]
    assert "老船长: 别偷懒" in block[1]["content"]  # his words inside her message
    assert "测绘员: 知道啦" in block[1]["content"]  # her name left inside the text
