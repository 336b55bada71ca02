"""Character cards in PNG files, as SillyTavern writes and reads them, and the card image.

SillyTavern keeps a card in ``tEXt`` chunks of the PNG: keyword ``chara`` holds the V2 card
and ``ccv3`` the V3 card, each as base64 of the UTF-8 JSON; a reader takes ``ccv3`` first.
When it writes a card it removes every existing ``chara``/``ccv3`` text chunk and inserts the
new ``chara`` and then ``ccv3`` chunk right before ``IEND``; :func:`embed` does the same, byte
for byte, so the image and every other chunk stay as they were. The chunks are read and
written here with ``struct`` and ``zlib.crc32`` (a ``tEXt`` chunk is a length, a type, a
Latin-1 keyword, a NUL, the text and a CRC): Pillow would re-encode the image and place text
chunks before the image data.

The image (:func:`render_image`) is drawn with Pillow: her name on a plain background whose
colour comes from her id, in a CJK font found on the machine (``fc-match``), else her Latin
name in Pillow's own font. No game art.
"""

from __future__ import annotations

import base64
import hashlib
import io
import shutil
import struct
import subprocess
import zlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from arklore.core.errors import ArkloreError

SIGNATURE = b"\x89PNG\r\n\x1a\n"
V2_KEY, V3_KEY = "chara", "ccv3"
CARD_KEYS = (V2_KEY, V3_KEY)
SIZE = (400, 600)
"""Card image size in pixels (SillyTavern shows avatars at 2:3)."""

FONT_CANDIDATES: tuple[str, ...] = (
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Bold.ttc",
    "/usr/share/fonts/opentype/noto/NotoSerifCJK-Regular.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
    "/usr/share/fonts/truetype/arphic/uming.ttc",
)


class CardFileError(ArkloreError):
    """A file is not a PNG, or holds no character card."""

    default_hint = "pass a card written by `arklore export card` or by SillyTavern"


@dataclass(frozen=True)
class Chunk:
    type: bytes
    body: bytes

    def encode(self) -> bytes:
        crc = zlib.crc32(self.type + self.body) & 0xFFFFFFFF
        return struct.pack(">I", len(self.body)) + self.type + self.body + struct.pack(">I", crc)


def chunks(data: bytes, where: str = "PNG") -> list[Chunk]:
    """The chunks of a PNG file, in order (CardFileError when it is not one)."""
    if not data.startswith(SIGNATURE):
        raise CardFileError(f"{where}: not a PNG file")
    out: list[Chunk] = []
    pos = len(SIGNATURE)
    while pos + 8 <= len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        ctype = data[pos + 4 : pos + 8]
        end = pos + 12 + length
        if end > len(data):
            raise CardFileError(f"{where}: truncated PNG (chunk {ctype!r} runs past the end)")
        out.append(Chunk(ctype, data[pos + 8 : pos + 8 + length]))
        pos = end
        if ctype == b"IEND":
            break
    if not out or out[-1].type != b"IEND":
        raise CardFileError(f"{where}: PNG without an IEND chunk")
    return out


def text_chunk(keyword: str, text: str) -> Chunk:
    return Chunk(b"tEXt", keyword.encode("latin-1") + b"\x00" + text.encode("latin-1"))


def _keyword(c: Chunk) -> str | None:
    if c.type != b"tEXt":
        return None
    return c.body.partition(b"\x00")[0].decode("latin-1")


def text_chunks(data: bytes, where: str = "PNG") -> dict[str, str]:
    """keyword -> text of every ``tEXt`` chunk (the last one wins for a repeated keyword)."""
    out = {}
    for c in chunks(data, where):
        if c.type == b"tEXt":
            key, _, value = c.body.partition(b"\x00")
            out[key.decode("latin-1")] = value.decode("latin-1")
    return out


def strip_card(data: bytes) -> bytes:
    """The PNG without its ``chara``/``ccv3`` text chunks (the image a card is written on)."""
    kept = [c for c in chunks(data) if (_keyword(c) or "").lower() not in CARD_KEYS]
    return SIGNATURE + b"".join(c.encode() for c in kept)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def _unb64(text: str, where: str) -> str:
    try:
        return base64.b64decode(text, validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError) as exc:
        raise CardFileError(f"{where}: its card chunk is not base64 of UTF-8 text") from exc


def embed(image: bytes, v2_json: str, v3_json: str) -> bytes:
    """``image`` with the card: old card chunks removed, ``chara`` (V2) then ``ccv3`` (V3)
    inserted before ``IEND``, as SillyTavern writes them."""
    kept = [c for c in chunks(image) if (_keyword(c) or "").lower() not in CARD_KEYS]
    new = [text_chunk(V2_KEY, _b64(v2_json)), text_chunk(V3_KEY, _b64(v3_json))]
    return SIGNATURE + b"".join(c.encode() for c in [*kept[:-1], *new, kept[-1]])


def card_texts(data: bytes, where: str = "PNG") -> dict[str, str]:
    """The card JSON texts a PNG holds, by chunk keyword (``ccv3``, ``chara``)."""
    found = {k.lower(): v for k, v in text_chunks(data, where).items() if k.lower() in CARD_KEYS}
    if not found:
        raise CardFileError(f"{where}: the PNG holds no chara or ccv3 text chunk")
    return {k: _unb64(v, where) for k, v in found.items()}


# -- the image ----------------------------------------------------------------------------------


@cache
def find_font() -> str | None:
    """A font file with Chinese glyphs: the usual Debian paths, else ``fc-match``."""
    for p in FONT_CANDIDATES:
        if Path(p).is_file():
            return p
    if shutil.which("fc-match"):
        try:
            out = subprocess.run(
                ["fc-match", "-f", "%{file}", ":lang=zh"],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None
        if out and Path(out).is_file():
            return out
    return None


def _colour(seed: str) -> tuple[int, int, int]:
    """A muted background colour from ``seed`` (her id): stable across runs and machines."""
    h = hashlib.sha256(seed.encode()).digest()
    return (40 + h[0] % 60, 45 + h[1] % 60, 55 + h[2] % 70)


def render_image(name: str, latin: str, seed: str, font_path: str | None = None) -> bytes:
    """A plain card image: ``name`` large in the middle, ``latin`` (her Latin name or id)
    below; without a CJK font, ``latin`` alone."""
    from PIL import Image, ImageDraw, ImageFont

    font_path = font_path if font_path is not None else find_font()
    img = Image.new("RGB", SIZE, _colour(seed))
    draw = ImageDraw.Draw(img)
    w, h = SIZE
    draw.rectangle((16, 16, w - 17, h - 17), outline=(230, 230, 230), width=2)
    lines: list[tuple[str, ImageFont.ImageFont | ImageFont.FreeTypeFont]] = []
    if font_path is not None:
        size = max(28, min(96, int((w - 80) / max(1, len(name)))))
        lines.append((name, ImageFont.truetype(font_path, size)))
        lines.append((latin, ImageFont.truetype(font_path, 24)))
    else:
        lines.append((latin or seed, ImageFont.load_default(size=40)))
    heights = [draw.textbbox((0, 0), t, font=f)[3] for t, f in lines]
    y = (h - sum(heights) - 24 * (len(lines) - 1)) / 2
    for (text, font), lh in zip(lines, heights, strict=True):
        tw = draw.textlength(text, font=font)
        draw.text(((w - tw) / 2, y), text, font=font, fill=(245, 245, 245))
        y += lh + 24
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=False, compress_level=9)
    return buf.getvalue()


__all__ = [
    "CARD_KEYS",
    "SIGNATURE",
    "V2_KEY",
    "V3_KEY",
    "CardFileError",
    "Chunk",
    "card_texts",
    "chunks",
    "embed",
    "find_font",
    "render_image",
    "strip_card",
    "text_chunk",
    "text_chunks",
]
