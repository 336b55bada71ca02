"""names layer."""
