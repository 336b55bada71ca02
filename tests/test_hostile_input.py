"""Text no entry point accepts -- lone surrogates (invalid UTF-8 on the command line, a
``"\\ud800"`` escape in JSON) and control characters -- on every HTTP route and every command
that takes text: a 400 with the service's error shape, or one line and exit 2; never a 500,
a dropped connection or a traceback. Hypothesis draws the text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import typer
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.service_world import AMIYA, kb_workspace, make_kb

from arklore.cli.app import app as cli_app
from arklore.cli.app import main
from arklore.core.errors import BadTextError
from arklore.core.text import check_message, check_text
from arklore.service.app import create_app
from arklore.service.errors import is_openai_path

SETTINGS = settings(max_examples=12, deadline=None, database=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))  # fmt: skip
ALLOWED_CONTROLS = "\t\n\r"

# -- the strategies ----------------------------------------------------------------------------
surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
controls = st.characters(categories=["Cc"]).filter(lambda c: c not in ALLOWED_CONTROLS)
fine = st.text(st.characters(exclude_categories=["Cs", "Cc"]), max_size=12)


@st.composite
def bad_text(draw: st.DrawFn, bad: st.SearchStrategy[str] = surrogates | controls) -> str:
    """Some text with at least one character the text rule refuses, anywhere in it."""
    return draw(fine) + draw(bad) + draw(st.text(max_size=12))


@st.composite
def bad_argv_text(draw: st.DrawFn) -> str:
    """A command-line argument as Python sees it: bytes that are not all UTF-8 (decoded with
    surrogateescape, as for sys.argv), or a control character (no NUL: argv cannot hold one)."""
    if draw(st.booleans()):
        raw = draw(fine).encode() + draw(st.binary(min_size=1, max_size=4).filter(_not_utf8))
        return raw.decode("utf-8", "surrogateescape")
    return draw(bad_text(controls.filter(lambda c: c != "\x00")))


def _not_utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


# -- the rule ----------------------------------------------------------------------------------
@given(text=st.text(max_size=40))
@SETTINGS
def test_the_rule_refuses_exactly_surrogates_and_controls(text: str) -> None:
    bad = [i for i, c in enumerate(text) if (0xD800 <= ord(c) <= 0xDFFF)
           or (c not in ALLOWED_CONTROLS and (ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F))]  # fmt: skip
    if not bad:
        assert check_text(text) == text
        return
    with pytest.raises(BadTextError) as err:
        check_text(text, what="message")
    assert err.value.position == bad[0] + 1 and err.value.exit_code == 2
    err.value.one_line().encode("utf-8")  # the error itself can always be printed


@given(text=bad_text())
@SETTINGS
def test_check_message_applies_the_rule(text: str) -> None:
    with pytest.raises(BadTextError):
        check_message(text, 8000)


def test_tabs_and_line_breaks_are_text() -> None:
    assert check_message("第一行\n\t第二行\r\n", 100) == "第一行\n\t第二行\r\n"


# -- every HTTP route ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    home = make_kb(tmp_path_factory.mktemp("hostile") / "home")
    app = create_app(kb_workspace(home, admin_token="hostile-token"), warm_up=False)
    # a client on this machine: the OpenAI-compatible routes answer it without client keys
    with TestClient(app, raise_server_exceptions=False, client=("127.0.0.1", 50000)) as c:
        yield c


def _operations(client: TestClient) -> list[tuple[str, str, dict[str, Any]]]:
    doc = client.get("/openapi.json").json()
    return [(m.upper(), path, op) for path, ops in doc["paths"].items() for m, op in ops.items()]


def _refused(r: Any) -> None:
    assert r.status_code == 400, (r.status_code, r.text[:300])
    err = r.json()["error"]  # the service's shape (or OpenAI's, on its routes)
    code = err if isinstance(err, str) else err.get("code")
    assert code == "bad_text", r.text[:300]
    msg = r.json()["message"] if isinstance(err, str) else err["message"]
    assert "invalid UTF-8" in msg or "control character" in msg


def _url_bytes(text: str) -> str:
    """Percent-encoded as it would arrive: surrogates as the invalid bytes a client sends."""
    return quote(text.encode("utf-8", "surrogatepass"), safe="")


def _fill(path: str, bad: dict[str, str]) -> str:
    out = path
    for name in ("name", "a", "b", "char_id", "model"):
        out = out.replace("{" + name + "}", _url_bytes(bad.get(name, "阿米娅")))
    return out.replace("{stage_path}", _url_bytes(bad.get("stage_path", "obt/main/x")))


def test_every_route_taking_text_is_covered(client: TestClient) -> None:
    ops = _operations(client)
    with_text = {
        f"{m} {p}" for m, p, op in ops
        if any(x.get("schema", {}).get("type") == "string" for x in op.get("parameters", []))
        or "requestBody" in op
    }  # fmt: skip
    assert {"POST /v1/turn", "POST /v1/relation-context", "GET /v1/search",
            "GET /v1/operators/{name}/memories", "PUT /v1/operators/{name}/persona",
            "GET /v1/relations/{a}/{b}", "GET /v1/stages/{stage_path}/lines"} <= with_text  # fmt: skip
    assert len(with_text) >= 12


@given(data=st.data())
@settings(SETTINGS, max_examples=20)
def test_a_bad_path_or_query_parameter_is_a_400(client: TestClient, data: st.DataObject) -> None:
    method, path, op = data.draw(st.sampled_from(_operations(client)))
    params = [p for p in op.get("parameters", []) if p.get("schema", {}).get("type") == "string"]
    if not params:
        return
    param = data.draw(st.sampled_from(params))
    text = data.draw(bad_text())
    if param["in"] == "path":
        url = _fill(path, {param["name"]: text})
    else:
        url = _fill(path, {}) + f"?{param['name']}={_url_bytes(text)}"
    _refused(client.request(method, url, headers={"Authorization": "Bearer hostile-token"}))


BODIES: dict[str, dict[str, Any]] = {
    "/v1/turn": {"operator": "阿米娅", "message": "你好", "history": [
        {"role": "user", "content": "在吗"}], "participants": ["凯尔希"], "l3_targets": [AMIYA]},
    "/v1/relation-context": {"operator": "阿米娅", "message": "你好", "l3_targets": [AMIYA]},
    "/v1/operators/{name}/persona": {"text": "# 阿米娅\n\n## 锚\n\n- 代号：阿米娅\n"},
    "/v1/chat/completions": {"model": "阿米娅", "messages": [
        {"role": "system", "content": "扮演"}, {"role": "user", "content": "你好"}],
        "participants": ["凯尔希"], "l3_targets": [AMIYA]},
    "/v1/curated/confirm": {"from": "陈", "to": "星熊", "predicate": "上下级", "by": "审阅者",
                            "note": "看过", "sha": "0" * 64},
    "/v1/curated/reject": {"from": "陈", "to": "星熊", "predicate": "上下级", "by": "审阅者",
                           "note": "看过", "sha": "0" * 64},
}  # fmt: skip


def _strings(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, str):
        yield at
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, (*at, i))


def _replace(value: Any, at: tuple[Any, ...], new: str) -> Any:
    if not at:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[at[0]] = _replace(value[at[0]], at[1:], new)
    return copy


def test_every_route_with_a_body_has_a_body_here(client: TestClient) -> None:
    assert {p for m, p, op in _operations(client) if "requestBody" in op} <= set(BODIES)


@given(data=st.data())
@settings(SETTINGS, max_examples=30)
def test_a_bad_string_anywhere_in_a_json_body_is_a_400(
    client: TestClient, data: st.DataObject
) -> None:
    path = data.draw(st.sampled_from(sorted(BODIES)))
    body = BODIES[path]
    at = data.draw(st.sampled_from(list(_strings(body))))
    # a message the chat completions only forward (the card) may hold control characters:
    # there only text that is not Unicode is refused (tests/test_service_openai.py)
    forwarded = path == "/v1/chat/completions" and at == ("messages", 0, "content")
    sent = _replace(body, at, data.draw(bad_text(surrogates) if forwarded else bad_text()))
    raw = json.dumps(sent, ensure_ascii=True)  # "\ud800" escapes, as any JSON client sends
    method = "PUT" if "persona" in path else "POST"
    r = client.request(method, _fill(path, {}), content=raw.encode(), headers={
        "Content-Type": "application/json", "Authorization": "Bearer hostile-token"})  # fmt: skip
    _refused(r)


def test_the_valid_bodies_pass(client: TestClient) -> None:
    for path in ("/v1/turn", "/v1/relation-context"):
        assert client.post(path, json=BODIES[path]).status_code == 200


def test_a_json_key_and_a_bare_surrogate_escape_are_refused_too(client: TestClient) -> None:
    for raw in (b'{"operator":"\\u963f\\u7c73\\u5a05","message":"\\ud800"}',
                b'{"operator":"a","message":"x","\\udfff":1}',
                b'{"operator":"a","message":"\\u0000"}'):  # fmt: skip
        _refused(client.post("/v1/turn", content=raw, headers={"Content-Type": "application/json"}))


# -- every command that takes text -------------------------------------------------------------
def _text_params() -> list[tuple[list[str], Any, list[Any]]]:
    """(command path, a ``str`` parameter, the command's required arguments) for every
    command of the ``arklore`` tree."""
    out = []

    def walk(cmd: Any, path: list[str]) -> None:
        if hasattr(cmd, "commands"):  # a group
            for name, sub in cmd.commands.items():
                walk(sub, [*path, name])
            return
        required = [p for p in cmd.params if p.param_type_name == "argument" and p.required]
        for p in cmd.params:
            if p.type_descriptor.annotation is str:
                out.append((path, p, required))

    walk(typer.main.get_command(cli_app), [])
    return out


TEXT_PARAMS = _text_params()


def test_the_commands_taking_text_are_found() -> None:
    names = {" ".join(path) for path, _, _ in TEXT_PARAMS}
    assert {"turn", "context", "chat", "names find", "names resolve", "memories", "persona",
            "graph show", "curate search", "operators show"} <= names  # fmt: skip


def _argv(path: list[str], param: Any, required: list[Any], bad: str) -> list[str]:
    args = [bad if r is param else "阿米娅" for r in required]
    if param.param_type_name == "option":
        args += [param.opts[0], bad]
    elif not param.required:
        args.append(bad)
    return ["arklore", *path, *args]


@given(data=st.data())
@settings(SETTINGS, max_examples=40)
def test_a_bad_argument_to_any_command_is_one_line_and_exit_2(
    data: st.DataObject, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, param, required = data.draw(st.sampled_from(TEXT_PARAMS))
    argv = _argv(path, param, required, data.draw(bad_argv_text()))
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as done:
        main()
    err = capsys.readouterr().err
    assert done.value.code == 2, (argv, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: the command-line argument"), err
    assert "Traceback" not in err


# -- the real command, real bytes --------------------------------------------------------------
@pytest.fixture(scope="module")
def kb_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    home = make_kb(tmp_path_factory.mktemp("hostile-cli") / "home")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_")}
    src = str(Path(__file__).resolve().parents[1] / "src")
    env.update(ARKLORE_HOME=str(home), ARKLORE_EMBEDDER="hash", PYTHONPATH=src, LC_ALL="C.UTF-8")
    return env


RUN = [sys.executable, "-m", "arklore"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "args,stdin",
    [
        ([b"turn", "阿米娅".encode(), b"abc\xff"], b""),
        ([b"context", "阿米娅".encode(), b"\xed\xa0\x80"], b""),
        ([b"names", b"find", b"\xc3("], b""),
        ([b"memories", "阿米娅".encode(), b"\xff\xfe"], b""),
        ([b"names", b"find", b"-"], b"abc\xff"),
        ([b"context", "阿米娅".encode(), b"-"], "你好\x01".encode()),
        ([b"chat", "阿米娅".encode(), b"--no-llm"], "你好\n".encode() + b"\xff\n/quit\n"),
    ],
)  # fmt: skip
def test_invalid_utf8_from_a_terminal_never_gives_a_traceback(
    kb_env: dict[str, str], args: list[bytes], stdin: bytes
) -> None:
    proc = subprocess.run([*[a.encode() for a in RUN], *args], input=stdin, env=kb_env,
                          capture_output=True, timeout=120)  # fmt: skip
    err = proc.stderr.decode("utf-8", "replace")
    assert b"Traceback" not in proc.stdout + proc.stderr, err
    errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and ("invalid UTF-8" in errors[0] or "control" in errors[0]), err
    if args[0] == b"chat":  # the chat goes on after a bad line
        assert proc.returncode == 0 and "【阿米娅的人设】" in proc.stdout.decode()
    else:
        assert proc.returncode == 2, err


@pytest.mark.slow
@pytest.mark.parametrize(
    "console,args,says",
    [
        # Python's own escape hatch set to a console that has no Chinese
        ({"PYTHONIOENCODING": "ascii"}, ["turn", "阿米娅", "你好"], "PYTHONIOENCODING=utf-8"),
        ({"PYTHONIOENCODING": "ascii"}, ["names", "find", "阿米娅来了"], "PYTHONIOENCODING=utf-8"),
        ({"PYTHONIOENCODING": "ascii"}, ["chat", "阿米娅", "--no-llm"], "PYTHONIOENCODING=utf-8"),
        # the C locale with Python's UTF-8 mode and locale coercion off: the arguments typed
        # in Chinese are not text in its encoding, and nothing Chinese can be printed
        ({"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"},
         ["turn", "阿米娅", "你好"], "LANG=C.UTF-8"),
        ({"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"},
         ["timeline"], "LANG=C.UTF-8"),
    ],
)  # fmt: skip
def test_a_console_without_chinese_gets_one_line_naming_the_setting_not_a_traceback(
    kb_env: dict[str, str], console: dict[str, str], args: list[str], says: str
) -> None:
    env = {**kb_env, **console}
    proc = subprocess.run([*[a.encode() for a in RUN], *[a.encode() for a in args]],
                          input="你好\n/quit\n".encode(), env=env, capture_output=True,
                          timeout=120)  # fmt: skip
    err = proc.stderr.decode("utf-8", "replace")
    assert b"Traceback" not in proc.stdout + proc.stderr, err
    errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and says in errors[0], err
    assert proc.returncode in (1, 2), (proc.returncode, err)


def test_a_body_over_the_limit_is_refused_whether_its_length_is_said_or_not(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    home = make_kb(tmp_path_factory.mktemp("limit") / "home")
    app = create_app(kb_workspace(home, max_body_bytes=4096), warm_up=False)
    big = {
        "operator": "阿米娅",
        "message": "你好",
        "history": [{"role": "user", "content": "x" * 5000}],
    }

    # no Content-Length: refused as they arrive
    def chunks(body: dict[str, Any]) -> Iterator[bytes]:
        data = json.dumps(body).encode()
        for i in range(0, len(data), 1024):
            yield data[i : i + 1024]

    json_type = {"content-type": "application/json"}
    chat = {"model": "阿米娅", "messages": big["history"]}
    # a client on this machine: the OpenAI route reads the body (no client keys needed)
    with TestClient(app, raise_server_exceptions=False, client=("127.0.0.1", 50000)) as c:
        assert c.post("/v1/turn", json={"operator": "阿米娅", "message": "你好"}).status_code == 200
        for r in (c.post("/v1/turn", json=big),
                  c.post("/v1/turn", content=chunks(big), headers=json_type)):  # fmt: skip
            assert r.status_code == 413 and r.json()["error"] == "body_too_large", r.text[:200]
        # on the OpenAI-compatible routes, in OpenAI's error shape (what its SDK reads)
        for r in (c.post("/v1/chat/completions", json=chat),
                  c.post("/v1/chat/completions", content=chunks(chat), headers=json_type)):  # fmt: skip
            assert r.status_code == 413, r.text[:200]
            assert r.json()["error"]["code"] == "body_too_large", r.text[:200]
    routes = set(app.openapi()["paths"])
    openai_routes = {p for p in routes if p.startswith(("/v1/chat", "/v1/models"))}
    assert openai_routes and all(is_openai_path(p) for p in openai_routes)
    assert not any(is_openai_path(p) for p in routes - openai_routes)
