"""The declared tools: their specs, result contracts and the built-in table."""
