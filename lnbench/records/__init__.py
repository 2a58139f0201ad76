"""Run folders (manifest, atomic writes, resume lookup) and the JSON schemas of their files."""
