"""Data: download, verify, prepare."""
