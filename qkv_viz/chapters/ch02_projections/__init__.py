"""Chapter 02: projections."""
