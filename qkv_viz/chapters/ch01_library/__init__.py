"""Chapter 01: library."""
