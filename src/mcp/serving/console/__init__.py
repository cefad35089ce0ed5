"""The web console at ``/console`` (docs/console.md): plain HTML, CSS and JS inside the package,
fed by the server's own state (its metrics registry, model host, rate limiter, audit log)."""
