"""Plain data types and errors shared by every layer; no I/O here."""
