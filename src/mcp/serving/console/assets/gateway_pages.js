// The gateway console's pages: the registry, where a request would route, the pools, and canary
// rollouts with their gates over time (promote and abort through /admin/rollouts).
"use strict";

const gv = (id) => document.getElementById(id).value.trim();
const arm = (stats) => (stats ? `${stats.requests} req, p95 ${stats.p95_ms.toFixed(0)} ms, errors ${(stats.error_rate * 100).toFixed(2)} %, OOM ${stats.ooms}` : "–");

const Registry = {
  async enter() {
    const found = await Console.api("/console/api/registry");
    if (found.note) report("registry", new Error(found.note));
    fillTable(document.getElementById("registry-table"), found.data.map((v) => [
      v.id, v.stage, v.format, v.sha256.slice(0, 12) + "…", `${(v.size_bytes / 1048576).toFixed(1)} MiB`,
      v.quantization, v.signature_status,
      Object.entries(v.lineage || {}).map(([k, x]) => `${k}: ${typeof x === "object" ? JSON.stringify(x) : x}`).join("; ")]));
  },
};

const Routes = {
  async enter() {},

  async explain() {
    let body;
    try { body = JSON.parse(gv("rt-body")); } catch (e) { throw new Error(`the request body is not valid JSON: ${e.message}`); }
    document.getElementById("routes-error").textContent = "";
    const d = await Console.api(`/admin/route?api=${gv("rt-api")}`, { method: "POST", body: JSON.stringify(body) });
    const rows = [["Route", d.route + (d.is_default ? " (default)" : "")], ["Arm", d.arm], ["Model", d.model],
                  ["Pool", d.pool], ["Member now", d.member], ["Input tokens (estimated)", d.input_tokens],
                  ["Fallbacks", d.fallbacks.map((f) => `${f.when.join("/")} → ${f.model} on ${f.pool}`).join("; ") || "none"],
                  ["Routing table", d.table_sha256.slice(0, 12) + "…"]];
    document.getElementById("route-result").replaceChildren(...rows.flatMap(([k, x]) => [el("dt", k), el("dd", x)]));
  },
};

const Pools = {
  async enter() {
    const pools = await Console.api("/admin/pools");
    const rows = [];
    for (const [name, pool] of Object.entries(pools)) {
      for (const m of pool.members) {
        rows.push([name, m.name, m.url, m.healthy ? "yes" : "no", m.breaker, m.outstanding, m.requests, m.failures, m.last_error]);
      }
    }
    fillTable(document.getElementById("pools-table"), rows);
  },
};

const Rollouts = {
  shown: null,
  timer: null,

  async enter() {
    const listing = await Console.api("/admin/rollouts");
    const rollouts = listing.data.slice().sort((a, b) => b.id - a.id);
    fillTable(document.getElementById("rollouts-table"), rollouts.map((r) => [
      r.id, r.route, `${r.stable_arm} ${r.stable_model} / ${r.canary_arm} ${r.canary_model}`, r.steps.join(" → "),
      `${r.weight} %`, r.status, r.reason, this.actions(r)]));
    if (this.shown === null && rollouts.length) this.shown = rollouts[0].id;
    if (this.shown !== null) await this.events(this.shown);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.enter().catch((e) => report("rollouts", e)), 2000);
  },

  leave() { clearTimeout(this.timer); },

  actions(r) {
    const cell = el("span");
    const show = el("button", "Gates", { type: "button", class: "secondary", "aria-label": `Show the gates of rollout ${r.id}` });
    show.addEventListener("click", () => { this.shown = r.id; this.events(r.id).catch((e) => report("rollouts", e)); });
    cell.append(show);
    if (r.status === "running") {
      cell.append(" ", this.button(r, "promote", "Promote", {}), " ", this.button(r, "abort", "Abort", { reason: "aborted from the console" }));
    }
    return cell;
  },

  button(r, action, label, body) {
    const button = el("button", label, { type: "button", class: "secondary", "aria-label": `${label} rollout ${r.id} (${r.route})` });
    button.addEventListener("click", async () => {
      const out = document.getElementById("rollouts-result");
      if (!window.confirm(`${label} rollout ${r.id} of route ${r.route}?`)) { out.textContent = "Cancelled."; return; }
      try {
        const after = await Console.api(`/admin/rollouts/${r.id}/${action}`, { method: "POST", body: JSON.stringify(body) });
        out.className = "ok";
        out.textContent = `${label} rollout ${r.id}: now ${after.status} at ${after.weight} %`;
      } catch (e) {
        out.className = "error";
        out.textContent = `${label} rollout ${r.id}: ${e.message}`;
      }
      await this.enter();
    });
    return button;
  },

  async events(id) {
    const r = await Console.api(`/admin/rollouts/${id}`);
    document.getElementById("rollout-title").textContent = `Gates over time: rollout ${id} (${r.route}, gates p95 ≤ ${r.gates.max_p95_ms} ms, errors ≤ ${(r.gates.max_error_rate * 100).toFixed(2)} %, OOM ≤ ${r.gates.max_oom})`;
    fillTable(document.getElementById("rollout-events"), r.events.map((e) => [
      e.at.replace("T", " ").slice(0, 19), e.kind, e.step_index, `${e.weight} %`,
      e.passed === null ? null : e.passed ? "yes" : "no", arm(e.detail && e.detail.canary), arm(e.detail && e.detail.stable),
      e.detail && e.detail.failures ? e.detail.failures.join("; ") : (e.detail && e.detail.reason) || null]));
  },
};

const Pages = {
  registry: Registry, routes: Routes, pools: Pools, rollouts: Rollouts, noaccess: { async enter() {} },

  bind() {
    document.getElementById("route-form").addEventListener("submit", (event) => {
      event.preventDefault();
      Routes.explain().catch((e) => report("routes", e));
    });
    document.getElementById("pools-refresh").addEventListener("click", () => Pools.enter().catch((e) => report("pools", e)));
  },
};
