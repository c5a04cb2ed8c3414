"""Understanding a message: a `Reading` in, an `Interpretation` and a short plan out."""
