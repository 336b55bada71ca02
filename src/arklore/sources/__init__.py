"""Readers for the two story sources and the excel tables; they parse, they do not store."""
