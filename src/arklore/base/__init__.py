"""I/O primitives every layer may use and none owns: atomic file writes, SQLite files with
named migrations, reading the files users edit by hand. No domain knowledge lives here."""
