"""Importers: external logs → rollout records."""
