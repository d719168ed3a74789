"""prefix-audit: prefix-executability audit of tool-using LLM agents."""

__version__ = "0.1.0"
