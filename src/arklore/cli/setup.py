"""`arklore doctor` (is this machine set up, and what to do first) and `arklore config`
(the data checkouts and the home stored once in the user's config file)."""

from __future__ import annotations

from typing import Annotated

import typer

from arklore.cli import group
from arklore.cli._common import (
    JsonOpt,
    console,
    print_json,
    read_settings,
    say,
    user_config_file,
)
from arklore.core.errors import ArkloreError, UsageError
from arklore.doctor import run_doctor
from arklore.locations import CONFIG_KEYS, absolute, read_config, write_config
from arklore.settings import Settings
from arklore.sources.roots import DataRoots

app = typer.Typer()
config_app = group("config", "The data checkouts and the home, stored once for every shell.")


@app.command("doctor")
def doctor(json: JsonOpt = False) -> None:
    """Check what the main job needs: where the data checkouts and the home are (and where
    each came from: env, checkout, config, default), whether the home is built, the LLM
    (never its key), the embedder, a Chroma server, the web pages' JavaScript, chromium for
    the browser tests; for each missing one, what to do. Exit 0 when `arklore build` can run,
    2 with the first fix otherwise."""
    try:
        settings: Settings | ArkloreError = read_settings(check_paths=False)
    except ArkloreError as exc:
        settings = exc
    report = run_doctor(settings)
    if json:
        print_json(report.to_dict())
        raise typer.Exit(report.exit_code)
    for c in report.checks:
        mark = "ok  " if c.ok else ("FAIL" if c.required else "--  ")
        origin = f" [{c.origin}]" if c.origin and c.name != "settings" else ""
        console.print(f"{mark} {c.name:<9} {c.found}{origin}")
        if not c.ok:
            console.print(f"     {'':<9} -> {c.fix}")
    first = report.first_fix
    if first is not None:
        say("error:", "bold red", f"{first.name}: {first.fix}")
    raise typer.Exit(report.exit_code)


KeyArg = Annotated[str, typer.Argument(help="gamedata, astr or home.")]


def _key(key: str) -> str:
    if key not in CONFIG_KEYS:
        raise UsageError(f"unknown config key {key!r}", hint=f"use one of {', '.join(CONFIG_KEYS)}")
    return key


@config_app.command("set")
def config_set(
    key: KeyArg, path: Annotated[str, typer.Argument(help="The folder (stored absolute).")]
) -> None:
    """Store where a data checkout or the home is; the environment still wins
    (ARKLORE_GAMEDATA, ARKLORE_ASTR, ARKLORE_HOME), and for the data so does a
    ../shared/arknights next to a source checkout."""
    key = _key(key)
    if not path.strip():
        raise UsageError(
            f"no folder given for {key}", hint=f"give the folder: arklore config set {key} PATH"
        )
    value = absolute(path)
    if key in ("gamedata", "astr"):
        roots = DataRoots(**{key: value})
        (roots.require_gamedata if key == "gamedata" else roots.require_astr)()
    elif value.exists() and not value.is_dir():
        raise UsageError(f"{value} is not a folder", hint="give the home's folder")
    cfg = user_config_file()
    stored = read_config(cfg)
    stored[key] = str(value)
    write_config(cfg, stored)
    say("stored:", "green", f"{key} = {value} in {cfg}")


@config_app.command("unset")
def config_unset(keys: Annotated[list[str], typer.Argument(help="gamedata, astr, home.")]) -> None:
    """Forget stored values (the next source in line is used: see `arklore config show`)."""
    cfg = user_config_file()
    stored = read_config(cfg)
    for key in keys:
        stored.pop(_key(key), None)
    write_config(cfg, stored)
    say("stored:", "green", f"{cfg} now holds {', '.join(stored) or 'nothing'}")


@config_app.command("show")
def config_show(json: JsonOpt = False) -> None:
    """The stored values, and the data checkouts and home in use with where each came from."""
    cfg = user_config_file()
    stored = read_config(cfg)
    settings = read_settings(check_paths=False)
    used = {
        key: {"path": str(getattr(settings, key) or ""), "from": settings.origins.get(key, "")}
        for key in CONFIG_KEYS
    }
    if json:
        print_json({"file": str(cfg), "stored": stored, "used": used})
        return
    console.print(f"config file: {cfg}" + ("" if cfg.is_file() else " (none yet)"))
    for key in CONFIG_KEYS:
        line = f"{key:<9} {used[key]['path'] or '(none)'}  [{used[key]['from']}]"
        if key in stored and used[key]["from"] != "config":
            line += f"  (stored: {stored[key]})"
        console.print(line)
