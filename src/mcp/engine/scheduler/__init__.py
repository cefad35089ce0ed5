"""Iteration-level scheduling: which requests run in the next engine step, and how many tokens each."""
