"""Rego policies: a bundle folder compiled once per version (``bundle``), evaluated in-process
with regopy (``engine.RegoPolicyEngine``, hot-reloaded) or by an OPA server
(``opa_rest.OPAPolicyEngine``); ``decision.Decision`` is what either answers."""
