"""Chapter 09: real_model."""
