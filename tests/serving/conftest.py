"""Fixtures of the serving tests: the tiny model and `start_server` live in tests/conftest.py, shared with
the gateway tests."""
