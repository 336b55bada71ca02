"""Builders shared by the tests: invented worlds in the formats arklore reads (never game
text). ``store`` holds the one recipe for an ingested store made from Stage objects."""
