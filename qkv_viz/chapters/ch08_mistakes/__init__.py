"""Chapter 08: mistakes."""
