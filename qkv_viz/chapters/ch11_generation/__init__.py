"""Chapter 11: generating text one token at a time, the K/V cache, shared K/V heads."""
