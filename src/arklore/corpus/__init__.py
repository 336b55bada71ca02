"""corpus layer."""
