"""Where things are: the two data checkouts and the state folder, from the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from arklore.core.errors import DataNotFoundError

STORY_SUBDIR = Path("zh_CN/gamedata/story")
EXCEL_SUBDIR = Path("zh_CN/gamedata/excel")
ASTR_ZH = Path("zh_CN")


@dataclass(frozen=True)
class Settings:
    home: Path  # ARKLORE_HOME: all state lives here, never inside the data checkouts
    gamedata: Path | None  # ARKLORE_GAMEDATA: Kengxxiao/ArknightsGameData checkout
    astr: Path | None  # ARKLORE_ASTR: 050644zf/ArknightsStoryJson checkout

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        home = Path(env.get("ARKLORE_HOME") or "var")
        gamedata = env.get("ARKLORE_GAMEDATA")
        astr = env.get("ARKLORE_ASTR")
        return cls(
            home=home,
            gamedata=Path(gamedata) if gamedata else None,
            astr=Path(astr) if astr else None,
        )

    @property
    def db_path(self) -> Path:
        return self.home / "arklore.sqlite3"

    def require_gamedata(self) -> Path:
        return _require(self.gamedata, "ARKLORE_GAMEDATA", STORY_SUBDIR)

    def require_astr(self) -> Path:
        return _require(self.astr, "ARKLORE_ASTR", STORY_SUBDIR)

    def avg_story_root(self) -> Path:
        return self.require_gamedata() / STORY_SUBDIR

    def excel_root(self) -> Path:
        return self.require_gamedata() / EXCEL_SUBDIR

    def astr_story_root(self) -> Path:
        return self.require_astr() / STORY_SUBDIR

    def astr_zh_root(self) -> Path:
        return self.require_astr() / ASTR_ZH


def _require(root: Path | None, var: str, sub: Path) -> Path:
    if root is None:
        raise DataNotFoundError(f"{var} is not set")
    if not (root / sub).is_dir():
        raise DataNotFoundError(f"{var}={root} has no {sub} folder")
    return root
