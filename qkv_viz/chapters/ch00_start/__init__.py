"""Chapter 00: start here ("bank", by hand)."""
