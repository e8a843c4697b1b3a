"""Chapter 03: toy."""
