"""jobhash: preview the spec-hashed Job names the autoroll chart renders, byte-exact with Helm."""

__version__ = "0.3.0"
