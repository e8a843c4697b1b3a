"""Chapter 10: order and positions (sinusoids added to X, rotary positions on q and k)."""
