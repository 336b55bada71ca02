"""Avatar ids of popup speakers -> operators (names/avatars.py), on invented ids."""

from __future__ import annotations

from arklore.names.avatars import avatar_aliases, is_avatar_id

IDS = ["char_900_alpha", "char_1900_alpha2", "char_901_beta", "char_902_beta", "token_9_gamma"]


def test_avatar_id_resolves_by_the_char_id_it_ends() -> None:
    got = {(a.alias, a.char_id, a.source) for a in avatar_aliases(["$avatar_Alpha2"], IDS)}
    assert got == {("$avatar_Alpha2", "char_1900_alpha2", "avatar")}


def test_unknown_ambiguous_and_plain_names_get_no_alias() -> None:
    speakers = ["$avatar_beta", "$avatar_delta", "$avatar_gamma", "阿尔法", "char_900_alpha"]
    assert avatar_aliases(speakers, IDS) == []  # two betas; no delta; tokens are no operators
    assert is_avatar_id("$avatar_x") and not is_avatar_id("阿尔法")
