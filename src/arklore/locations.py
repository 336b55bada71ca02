"""Where arklore looks for its data and keeps its state when the environment does not say.

The data checkouts (``gamedata``, ``astr``), in order:

1. the environment (``ARKLORE_GAMEDATA``, ``ARKLORE_ASTR``);
2. ``../shared/arknights/{gamedata,astr}`` next to the source checkout arklore runs from (the
   folder holding the package's ``pyproject.toml``, found from the package's own path, never
   from the working directory), when that folder exists: what ``make`` passes;
3. what ``arklore config set gamedata|astr PATH`` stored in the user's config file
   (``$XDG_CONFIG_HOME/arklore/config.toml``, default ``~/.config/arklore/config.toml``).

``ARKLORE_IGNORE_CHECKOUT=1`` turns the checkout's part off (its data and its default home):
the test suite sets it, so that no test (nor a command it starts) reads the real data by
accident.

The home: ``ARKLORE_HOME``, else the config file's ``home``, else the default: ``<checkout>/var``
when arklore runs from a source checkout (the home ``make demo`` builds, whatever the working
directory), else the user's data folder (``$XDG_DATA_HOME/arklore``, default
``~/.local/share/arklore``).

:meth:`arklore.settings.Settings.from_env` is the one caller (with the environment it was
given); the ``arklore config`` and ``arklore doctor`` commands read and write the file here.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from arklore.base.files import atomic_write_text
from arklore.core.errors import ConfigError

CONFIG_KEYS: dict[str, str] = {
    "gamedata": "ARKLORE_GAMEDATA",
    "astr": "ARKLORE_ASTR",
    "home": "ARKLORE_HOME",
}
"""The values ``arklore config set`` stores, and the variable each one stands in for."""

SHARED_DATA = Path("..") / "shared" / "arknights"
"""The data folder ``make`` uses, relative to the checkout."""

# where a value came from (Settings.origins)
ENV, CHECKOUT, CONFIG, DEFAULT = "env", "checkout", "config", "default"


def package_checkout() -> Path | None:
    """The source checkout arklore runs from (``src/arklore`` under a folder whose
    ``pyproject.toml`` names the package), or None for an installed package."""
    root = Path(__file__).resolve().parents[2]
    pyproject = root / "pyproject.toml"
    try:
        text = pyproject.read_text(encoding="utf-8")
    except OSError:
        return None
    if (root / "src" / "arklore").is_dir() and 'name = "arklore"' in text:
        return root
    return None


def config_path(env: Mapping[str, str]) -> Path:
    """``$XDG_CONFIG_HOME/arklore/config.toml`` (default ``~/.config``)."""
    base = env.get("XDG_CONFIG_HOME", "").strip()
    root = Path(base) if base and Path(base).is_absolute() else _user_home(env) / ".config"
    return root / "arklore" / "config.toml"


def user_data_home(env: Mapping[str, str]) -> Path:
    """``$XDG_DATA_HOME/arklore`` (default ``~/.local/share/arklore``): the home of an
    installed arklore."""
    base = env.get("XDG_DATA_HOME", "").strip()
    root = Path(base) if base and Path(base).is_absolute() else _user_home(env) / ".local/share"
    return root / "arklore"


def _user_home(env: Mapping[str, str]) -> Path:
    home = env.get("HOME", "").strip()
    return Path(home) if home else Path.home()


def read_config(path: Path) -> dict[str, str]:
    """The stored values (an absent file holds none); ConfigError naming the file when it is
    not TOML or holds something else than the known keys' paths."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(
            f"{path}: cannot read it ({exc})",
            hint="fix the file, or remove it with `arklore config unset gamedata astr home`",
        ) from None
    out: dict[str, str] = {}
    for key, value in data.items():
        if key not in CONFIG_KEYS or not isinstance(value, str) or not value.strip():
            raise ConfigError(
                f"{path}: {key!r} is not one of {', '.join(CONFIG_KEYS)} with a path",
                hint=f"fix the file, or remove the entry with `arklore config unset {key}`",
            )
        out[key] = value
    return out


def write_config(path: Path, values: Mapping[str, str]) -> None:
    """Replace the file with ``values`` (atomically: a reader sees the old or the new file)."""
    lines = ["# written by `arklore config set`; `arklore config show` lists what is used"]
    lines += [f"{key} = {_toml_string(values[key])}" for key in CONFIG_KEYS if key in values]
    atomic_write_text(path, "\n".join(lines) + "\n")


def _toml_string(value: str) -> str:
    """A TOML basic string (a path may hold quotes, backslashes, any character)."""
    out = []
    for c in value:
        if c in '"\\':
            out.append("\\" + c)
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


@dataclass(frozen=True)
class Located:
    """A path setting's raw value (``None``: none found) and where it came from."""

    value: str | None
    origin: str  # ENV, CHECKOUT, CONFIG or DEFAULT


def locate(env: Mapping[str, str]) -> tuple[dict[str, Located], Path]:
    """The data checkouts and the home as the module doc orders them, and the config file
    read. Values are raw spellings; Settings resolves them."""
    cfg_path = config_path(env)
    stored = read_config(cfg_path)
    checkout = None if env.get("ARKLORE_IGNORE_CHECKOUT") == "1" else package_checkout()
    found: dict[str, Located] = {}
    for key in ("gamedata", "astr"):
        var = CONFIG_KEYS[key]
        shared = checkout / SHARED_DATA / key if checkout is not None else None
        if (env.get(var) or "").strip():
            found[key] = Located(env[var].strip(), ENV)
        elif shared is not None and shared.is_dir():
            found[key] = Located(os.path.normpath(shared), CHECKOUT)
        elif key in stored:
            found[key] = Located(stored[key], CONFIG)
        else:
            found[key] = Located(None, DEFAULT)
    if (env.get("ARKLORE_HOME") or "").strip():
        found["home"] = Located(env["ARKLORE_HOME"].strip(), ENV)
    elif "home" in stored:
        found["home"] = Located(stored["home"], CONFIG)
    else:
        default = checkout / "var" if checkout is not None else user_data_home(env)
        found["home"] = Located(str(default), DEFAULT)
    return found, cfg_path


def absolute(value: str | Path) -> Path:
    """A path as every record of it is made: ``~`` expanded, absolute, ``..`` and symlinks
    resolved (one place, one spelling)."""
    return Path(os.path.expanduser(value)).resolve()


__all__ = [
    "CHECKOUT",
    "CONFIG",
    "CONFIG_KEYS",
    "DEFAULT",
    "ENV",
    "SHARED_DATA",
    "Located",
    "absolute",
    "config_path",
    "locate",
    "package_checkout",
    "read_config",
    "user_data_home",
    "write_config",
]
