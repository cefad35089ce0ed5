"""Key/value caches."""
