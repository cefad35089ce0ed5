"""Building blocks of a decoder: norms, rotary embeddings, attention, MLP."""
