"""Keys, certificates and detached signatures: ``keys`` (a local evaluation CA, or the
operator's key and certificate files), ``cms`` (detached CMS/PKCS#7 signatures: made with
``cryptography``, read back with ``asn1crypto`` and checked with ``cryptography``),
``chain`` (a certificate path up to a trusted CA), ``models`` (``MODEL.mcp.sig``).
See docs/compliance.md, "Keys and signed models"."""
