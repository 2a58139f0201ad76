"""Reporting from files only: figures, printed tables and the HTML page (no per-kind logic)."""
