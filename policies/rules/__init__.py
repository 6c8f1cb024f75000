"""One module per rule; each exposes pure functions over plain mappings (engine wire names)."""
