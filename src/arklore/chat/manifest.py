"""The manifest: the operators an app exposes (``ARKLORE_MANIFEST``), optional.

A TOML file with one list, names resolved through the alias table like any other name::

    # operators this app lets people chat with
    operators = ["阿米娅", "凯尔希", "char_172_svrash"]

Without a manifest every operator is available. With one, any other operator is "not
available" (:class:`~arklore.core.errors.OperatorNotAvailableError`), though the knowledge
about her stays readable (relations of an exposed operator still name her). Alternate forms
of a listed operator are available too (the same person). A name the alias table does not know
or that is ambiguous makes the whole file invalid, with the line to fix.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from arklore.base.userfiles import read_user_text
from arklore.core.errors import ArkloreError, InputFileError, OperatorNotAvailableError


@dataclass(frozen=True)
class Manifest:
    path: str
    char_ids: frozenset[str]  # listed ids, with their base and alternate forms

    def check(self, char_id: str, name: str) -> None:
        if char_id not in self.char_ids:
            raise OperatorNotAvailableError(f"{name} ({char_id}) is not available in this app")

    def allows(self, char_id: str) -> bool:
        return char_id in self.char_ids


def load_manifest(
    path: Path,
    resolve: Callable[[str], str],
    family: Callable[[str], Iterable[str]],
) -> Manifest:
    """Read the manifest at ``path``; ``resolve`` is name -> char id (raising when unknown or
    ambiguous), ``family`` char id -> every form of that person."""
    text = read_user_text(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputFileError(str(path), "TOML", str(exc)) from None
    ops = data.get("operators")
    if not isinstance(ops, list) or not all(isinstance(x, str) for x in ops):
        raise InputFileError(str(path), "operators", "must be a list of names")
    ids: set[str] = set()
    for i, name in enumerate(ops):
        try:
            cid = resolve(name)
        except ArkloreError as exc:
            raise InputFileError(str(path), f"operators[{i}]", exc.message) from None
        ids.add(cid)
        ids.update(family(cid))
    return Manifest(str(path), frozenset(ids))
