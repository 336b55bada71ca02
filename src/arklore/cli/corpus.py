"""Corpus commands: ingest, verify-anchors, crosscheck, operators, demo."""

from __future__ import annotations
