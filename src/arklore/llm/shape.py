"""The base of every task's response shape (extraction and profile tasks alike): the shape is
checked here and nothing else (gates and rule checks judge the values), and a reply of the
wrong shape is one error, :class:`~arklore.core.errors.ResponseShapeError`, whichever task
asked."""

from __future__ import annotations

from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from arklore.core.errors import ResponseShapeError
from arklore.core.text import strip_json_fence

__all__ = ["ResponseShapeError", "Shape", "decode_shape", "validate_shape"]


class Shape(BaseModel):
    """Strict (no coercion: the gates must see ``"12"`` to refuse it); unknown keys ignored."""

    model_config = ConfigDict(extra="ignore", strict=True)


_S = TypeVar("_S", bound=Shape)


def validate_shape(shape: type[_S], data: Any) -> _S:
    """Validate already-decoded JSON (what the LLM service passes a schema callable)."""
    try:
        return shape.model_validate(data)
    except ValidationError as exc:
        raise ResponseShapeError(f"wrong shape: {exc.errors()[0]}") from None


def decode_shape(shape: type[_S], content: str) -> _S:
    """Raw reply text -> validated shape; ResponseShapeError on non-JSON or wrong shape."""
    try:
        data = orjson.loads(strip_json_fence(content))
    except orjson.JSONDecodeError as exc:
        raise ResponseShapeError(f"not JSON: {exc}") from None
    return validate_shape(shape, data)
