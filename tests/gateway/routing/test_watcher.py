"""Hot reload: a changed file is swapped in whole; a bad one is refused and the old serves on."""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

from mcp.gateway.routing import RequestContext, RouteTableWatcher

NUM_ROUTES = 20


def _routing_file(generation: int) -> str:
    """NUM_ROUTES routes (one per tenant) and a default, every pool tagged with the generation."""
    routes = "".join(
        f"  - name: r{i}\n    conditions: {{tenant: t{i}}}\n"
        f"    backend: {{model_id: 'm:{generation}', instance_pool: g{generation}-r{i}}}\n"
        f"    fallbacks: [{{backend: {{model_id: 'm:{generation}', instance_pool: g{generation}-fb{i}}}}}]\n"
        for i in range(NUM_ROUTES))
    return f"routes:\n{routes}default: {{backend: {{model_id: 'm:{generation}', instance_pool: g{generation}-default}}}}\n"


def _write_atomically(path: Path, text: str, serial: int) -> None:
    temporary = path.with_suffix(f".tmp{serial}")
    temporary.write_text(text)
    os.replace(temporary, path)


def _poll_until_swapped(watcher: RouteTableWatcher) -> bool:
    return any(watcher.poll() for _ in range(3))  # the file must hold still for two polls


def test_reload_swaps_the_whole_table(tmp_path):
    path = tmp_path / "routes.yaml"
    path.write_text(_routing_file(1))
    watcher = RouteTableWatcher(path)
    _write_atomically(path, _routing_file(2), 0)
    assert _poll_until_swapped(watcher)
    assert watcher.resolve(RequestContext(tenant="t3")).backend.instance_pool == "g2-r3"
    assert watcher.num_reloads == 1


def test_bad_file_is_rejected_and_the_old_table_serves(tmp_path, caplog):
    path = tmp_path / "routes.yaml"
    path.write_text(_routing_file(1))
    watcher = RouteTableWatcher(path)
    old = watcher.table
    _write_atomically(path, _routing_file(2).replace("model_id: 'm:2'", "model_id: 'm2'", 1), 0)
    with caplog.at_level(logging.ERROR, logger="mcp.gateway.routing.watcher"):
        assert not _poll_until_swapped(watcher)
    assert watcher.table is old and "neither name:version" in watcher.last_error
    assert "rejected, the previous table keeps serving" in caplog.text
    _write_atomically(path, _routing_file(3), 1)
    assert _poll_until_swapped(watcher) and watcher.last_error is None


def test_concurrent_resolves_never_see_a_half_loaded_table(tmp_path):
    path = tmp_path / "routes.yaml"
    path.write_text(_routing_file(0))
    mixed: list[str] = []
    generations_seen: set[str] = set()
    stop = threading.Event()

    def resolve_forever(reader: int) -> None:
        while not stop.is_set():
            table = watcher.table
            for i in range(NUM_ROUTES):
                decision = table.resolve(RequestContext(tenant=f"t{i}"))
                generation = decision.backend.instance_pool.split("-")[0]
                pools = [decision.backend.instance_pool, decision.fallback_for("error").instance_pool]
                if pools != [f"{generation}-r{i}", f"{generation}-fb{i}"] or len(table.routes) != NUM_ROUTES:
                    mixed.append(f"reader {reader}: {pools}")
                generations_seen.add(generation)

    with RouteTableWatcher(path, poll_s=0.005) as watcher:
        readers = [threading.Thread(target=resolve_forever, args=(r,)) for r in range(4)]
        for reader in readers:
            reader.start()
        for generation in range(1, 30):
            _write_atomically(path, _routing_file(generation), generation)
            threading.Event().wait(0.03)
        stop.set()
        for reader in readers:
            reader.join()
        reloads = watcher.num_reloads
    _poll_until_swapped(watcher)
    assert mixed == []
    assert reloads >= 1 and len(generations_seen) >= 2  # swaps happened while readers ran
    assert watcher.resolve(RequestContext(tenant="t0")).backend.instance_pool == "g29-r0"
