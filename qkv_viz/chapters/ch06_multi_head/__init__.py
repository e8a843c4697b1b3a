"""Chapter 06: multi_head."""
