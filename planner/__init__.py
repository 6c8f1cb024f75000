"""The offline ``aks-gpu`` command: plan, preflight, fit and scan."""

__version__ = "0.1.0"
"""The package's version (pyproject.toml reads it from here): SARIF names it without importing importlib.metadata."""
