"""Chapter 05: saturation."""
