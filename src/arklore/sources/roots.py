"""Where the two data checkouts are, and the folders inside them the readers use."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from arklore.core.errors import DataNotFoundError

STORY_SUBDIR = Path("zh_CN/gamedata/story")
EXCEL_SUBDIR = Path("zh_CN/gamedata/excel")
ASTR_ZH = Path("zh_CN")
CHARDICT = "chardict.json"


@dataclass(frozen=True)
class DataRoots:
    """The ArknightsGameData (``gamedata``) and ArknightsStoryJson (``astr``) checkouts; either
    may be None. The ``*_root`` methods raise DataNotFoundError naming the setting to fix."""

    gamedata: Path | None = None
    astr: Path | None = None

    def require_gamedata(self) -> Path:
        root = _require(self.gamedata, "ARKLORE_GAMEDATA", STORY_SUBDIR)
        self.check_not_swapped()
        return root

    def require_astr(self) -> Path:
        root = _require(self.astr, "ARKLORE_ASTR", STORY_SUBDIR)
        self.check_not_swapped()
        return root

    def check_not_swapped(self) -> None:
        """DataNotFoundError naming both variables when the gamedata root looks like an
        ArknightsStoryJson checkout and/or the astr root like an ArknightsGameData one (both
        have a ``zh_CN/gamedata/story`` folder: a swap would fail later, on a missing table)."""
        wrong = []
        if self.gamedata is not None and looks_like_astr(self.gamedata):
            wrong.append(
                f"ARKLORE_GAMEDATA={self.gamedata} looks like an ArknightsStoryJson checkout"
            )
        if self.astr is not None and looks_like_gamedata(self.astr):
            wrong.append(f"ARKLORE_ASTR={self.astr} looks like an ArknightsGameData checkout")
        if wrong:
            raise DataNotFoundError(
                "the data roots look swapped: " + "; ".join(wrong),
                hint="swap the values of ARKLORE_GAMEDATA and ARKLORE_ASTR: ARKLORE_GAMEDATA "
                "names the ArknightsGameData checkout, ARKLORE_ASTR the ArknightsStoryJson one",
            )

    def avg_story_root(self) -> Path:
        return self.require_gamedata() / STORY_SUBDIR

    def excel_root(self) -> Path:
        return self.require_gamedata() / EXCEL_SUBDIR

    def astr_story_root(self) -> Path:
        return self.require_astr() / STORY_SUBDIR

    def astr_zh_root(self) -> Path:
        return self.require_astr() / ASTR_ZH

    def excel_root_or_none(self) -> Path | None:
        """The excel folder when the checkout has one (voice lines, factions are optional)."""
        if self.gamedata is not None and (self.gamedata / EXCEL_SUBDIR).is_dir():
            return self.gamedata / EXCEL_SUBDIR
        return None

    def chardict_or_none(self) -> Path | None:
        """ASTR's ``zh_CN/chardict.json`` when present."""
        if self.astr is not None and (self.astr / ASTR_ZH / CHARDICT).is_file():
            return self.astr / ASTR_ZH / CHARDICT
        return None


def looks_like_gamedata(root: Path) -> bool:
    """An ArknightsGameData checkout: it has the excel tables' folder."""
    return (root / EXCEL_SUBDIR).is_dir()


def looks_like_astr(root: Path) -> bool:
    """An ArknightsStoryJson checkout: its ``zh_CN`` index files, or story files in JSON and no
    excel folder."""
    if (root / ASTR_ZH / CHARDICT).is_file() or (root / ASTR_ZH / "storyinfo.json").is_file():
        return True
    story = root / STORY_SUBDIR
    if looks_like_gamedata(root) or not story.is_dir():
        return False
    return (
        next(story.rglob("*.json"), None) is not None and next(story.rglob("*.txt"), None) is None
    )


def _require(root: Path | None, var: str, sub: Path) -> Path:
    if root is None:
        raise DataNotFoundError(
            f"{var} is not set, and neither ../shared/arknights next to the source checkout "
            "nor `arklore config` names the folder"
        )
    if not (root / sub).is_dir():
        raise DataNotFoundError(f"{var}={root} has no {sub} folder")
    return root
