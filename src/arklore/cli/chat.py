"""`arklore chat`: a terminal chat with an operator; `arklore turn`: one assembled turn;
`arklore serve`: the HTTP service."""

from __future__ import annotations

from typing import Annotated

import typer

from arklore.chat.session import CHAT_TASK, ChatSession
from arklore.chat.turn import render_why
from arklore.cli._common import (
    JsonOpt,
    L3Opt,
    MessageArg,
    OperatorArg,
    QuietInterrupt,
    UntilOpt,
    console,
    err_console,
    lenient_stdin,
    print_json,
    read_message,
    say,
    workspace,
)
from arklore.core.errors import ArkloreError, UsageError
from arklore.core.text import check_text

app = typer.Typer()

HELP = """commands: /why (what this turn injected), /who <name> (talk with someone else),
/reset (forget the history), /help, /quit (or Ctrl-D)"""


def _names(csv: str | None) -> list[str]:
    """Comma-separated operators of an option; one given empty (``--group ""``) is an error,
    not the option left out."""
    names = [x.strip() for x in (csv or "").replace("，", ",").split(",") if x.strip()]
    if csv is not None and not names:
        raise UsageError("no operator named in the option", hint="give names, such as 陈,星熊")
    return names


@app.command("chat")
def chat_cmd(
    operator: Annotated[str | None, typer.Argument(help="Operator name, alias or id.")] = None,
    group: Annotated[
        str | None, typer.Option("--group", help="Group chat: comma-separated operators.")
    ] = None,
    no_llm: Annotated[
        bool, typer.Option("--no-llm", help="Print the assembled prompt even with an LLM.")
    ] = False,
    until: UntilOpt = None,
) -> None:
    """Chat in the terminal with OPERATOR (or a --group) through the configured model (task
    `chat`: LLM_CHAT_MODEL, LLM_CHAT_BASE_URL... or the global LLM_* settings). Without a
    model, each message prints the system prompt that would be sent."""
    names = ([operator] if operator else []) + _names(group)
    if not names:
        raise ArkloreError("no operator to chat with", hint="arklore chat 阿米娅, or --group A,B")
    ws = workspace()
    use_llm = not no_llm and ws.settings.llm.configured(CHAT_TASK)
    llm = ws.llm() if use_llm else None
    try:
        session = ChatSession.start(ws.chat, names, llm, until=until)
        for line in ws.build_state().warnings():  # once, not with every message
            say("warning:", "yellow", line)
        who = "、".join(p.name for p in session.present)
        mode = ws.settings.llm_config(CHAT_TASK).model if llm else "no LLM: prompts only"
        console.print(f"chat with {who} ({mode}; /help for commands)")
        _loop(session)
    except KeyboardInterrupt:  # Ctrl-C ends a chat: the shell prompt on a line of its own
        console.print()
        raise QuietInterrupt from None
    finally:
        if llm is not None:
            err_console.print(llm.format_cost_line())
            llm.close()


def _loop(session: ChatSession) -> None:
    lenient_stdin()
    while True:
        try:
            line = input("博士> ")
        except EOFError:
            console.print()
            return
        try:
            line = check_text(line.strip(), what="line")
        except ArkloreError as exc:
            err_console.print(f"error: {exc.one_line()}")
            continue
        if not line:
            continue
        if line.startswith("/"):
            cmd, _, arg = line.partition(" ")
            if cmd in ("/quit", "/exit", "/q"):
                return
            if cmd == "/help":
                console.print(HELP)
            elif cmd == "/why":
                if not session.last:
                    console.print("nothing sent yet")
                for turn in session.last:
                    console.print(render_why(turn))
            elif cmd == "/who":
                try:
                    sp = session.switch(arg.strip()) if arg.strip() else None
                except ArkloreError as exc:
                    err_console.print(f"error: {exc.one_line()}")
                    continue
                if sp is None:
                    console.print("usage: /who <name>")
                else:
                    console.print(f"now talking with {sp.name} ({sp.char_id})")
            elif cmd == "/reset":
                session.reset()
                console.print("history cleared")
            else:
                console.print(f"unknown command {cmd}; {HELP}")
            continue
        try:
            for reply in session.send(line):
                if reply.text is None:
                    console.print(f"--- system prompt for {reply.turn.operator_name} "
                                  f"({reply.turn.total_tokens} tokens) ---")  # fmt: skip
                    console.print(reply.turn.system_prompt)
                else:
                    console.print(f"{reply.turn.operator_name}：{reply.text}")  # fmt: skip
        except ArkloreError as exc:
            err_console.print(f"error: {exc.one_line()}")


@app.command("turn")
def turn_cmd(
    operator: OperatorArg,
    message: MessageArg,
    group: Annotated[
        str | None, typer.Option("--group", help="Others present: comma-separated operators.")
    ] = None,
    l3: L3Opt = None,
    until: UntilOpt = None,
    json: JsonOpt = False,
) -> None:
    """The system-prompt blocks one chat turn with OPERATOR injects for MESSAGE."""
    ws = workspace()
    message = read_message(message, ws.settings.max_message_chars)
    turn = ws.chat.turn(
        operator, message, participants=_names(group), l3_targets=_names(l3), until=until
    )
    for line in turn.warnings:
        say("warning:", "yellow", line)
    if json:
        print_json(turn.to_dict())
        return
    console.print(render_why(turn))
    console.print()
    console.print(turn.system_prompt)


@app.command("serve")
def serve_cmd(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port.")] = 8000,
    workers: Annotated[int, typer.Option(min=1, max=64, help="Worker processes.")] = 1,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
) -> None:
    """Serve the built knowledge base over HTTP (read-only; writes need ARKLORE_ADMIN_TOKEN):
    the chat API under /v1, the web pages under /, /metrics, /healthz, /readyz."""
    from arklore.service.openai import check_exposure
    from arklore.service.run import serve

    ws = workspace()  # the settings are read (and a bad one reported) before anything starts
    check_exposure(host, ws.settings)  # a refusal is the only line printed
    build = ws.build_state()
    if not build.complete:  # it serves anyway (/readyz says not ready), but says so first
        say("warning:", "yellow", f"{build.problem()}; {build.hint()} (the server starts "
            "anyway; /readyz answers 503 until the build is done)")  # fmt: skip
    if ws.roots.excel_root_or_none() is None:
        say("warning:", "yellow", "ARKLORE_GAMEDATA is not set (or has no zh_CN/gamedata/excel "
            "folder): the review page cannot check voice quotes against the voice table and "
            "shows them as unverified; chat turns do not need it")  # fmt: skip
    serve(host=host, port=port, workers=workers, log_level=log_level)
