"""The model registry: ``Registry.open(url)``; schema in ``schema.py``, migrations in
``migrations/``, artifact importers in ``artifacts/``. See docs/governance.md."""
