"""Chapter 07: masks."""
