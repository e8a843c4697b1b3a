"""Chapter 04: scaling."""
