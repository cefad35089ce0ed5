// The console's pages: each has enter() (called when shown) and maybe leave(); bind() wires forms.
"use strict";

const fmtS = (s) => (s === null || s === undefined ? "–" : s < 1 ? `${(s * 1000).toFixed(0)} ms` : `${s.toFixed(2)} s`);
const fmtShare = (x) => (x === null || x === undefined ? "–" : `${(x * 100).toFixed(1)} %`);
const fmtBytes = (n) => (n === null || n === undefined ? "–" : `${(n / 1048576).toFixed(1)} MiB`);
const fmtTime = (us) => new Date(us / 1000).toISOString().replace("T", " ").slice(0, 19);
const value = (id) => document.getElementById(id).value.trim();
// mcp_redactions ({count, input: {kind: n}, output: {kind: n}}) as "3 (prompt: 1 email; answer: 2 phone)"
const redactionText = (r) => `${r.count} (` + [["prompt", r.input], ["answer", r.output]]
  .filter(([, counts]) => Object.keys(counts).length)
  .map(([where, counts]) => `${where}: ` + Object.entries(counts).map(([kind, n]) => `${n} ${kind}`).join(", "))
  .join("; ") + ")";

const Overview = {
  abort: null,
  tokens: null,
  ttft: null,

  async enter() {
    this.tokens = this.tokens || new LineChart(document.getElementById("chart-tokens"));
    this.ttft = this.ttft || new LineChart(document.getElementById("chart-ttft"));
    this.leave();
    this.abort = new AbortController();
    const status = document.getElementById("ov-status");
    const response = await fetch("/console/api/overview", { headers: Console.headers(), signal: this.abort.signal });
    if (!response.ok) throw new Error(await errorText(response));
    status.textContent = "live";
    readEvents(response, (name, data) => this.frame(JSON.parse(data)), this.abort.signal)
      .catch(() => { status.textContent = "closed"; });
  },

  leave() {
    if (this.abort) this.abort.abort();
    this.abort = null;
  },

  frame(frame) {
    document.getElementById("ov-window").textContent = frame.window_s.toFixed(0);
    const total = frame.classes.reduce((sum, row) => sum + row.tokens_per_s, 0);
    const ttfts = {};
    for (const row of frame.classes) ttfts[`${row.model}:${row.version} ${row.slo_class}`] = row.ttft_p95_s;
    this.tokens.push({ "tokens/s": total });
    this.ttft.push(ttfts);
    document.getElementById("ov-tokens-per-s").textContent = total.toFixed(1);
    const worst = Object.values(ttfts).filter((v) => v !== null);
    document.getElementById("ov-ttft-p95").textContent = worst.length ? Math.max(...worst).toFixed(3) : "–";
    fillTable(document.getElementById("ov-classes"), frame.classes.map((r) => [
      `${r.model}:${r.version}`, r.slo_class, fmtS(r.ttft_p50_s), fmtS(r.ttft_p95_s), fmtS(r.tpot_p50_s),
      fmtS(r.tpot_p95_s), r.tokens_per_s.toFixed(1), r.num_requests, r.num_preemptions, fmtShare(r.slo_attainment)]));
    fillTable(document.getElementById("ov-versions"), frame.versions.map((v) => [
      `${v.model}:${v.version}`, frame.current[v.model] === v.version ? "yes" : "no", v.num_running,
      v.num_waiting, fmtShare(v.kv_cache_usage)]));
    const refused = Object.entries(frame.refused).flatMap(([transport, codes]) =>
      Object.entries(codes).map(([code, n]) => `${n} ${code} (${transport === "grpc" ? "gRPC" : "HTTP"})`));
    document.getElementById("ov-refused").textContent = refused.length ? refused.join(", ") : "0";
  },
};

const Playground = {
  async enter() {
    const listing = await Console.api("/v1/models");
    const select = document.getElementById("pg-model");
    const chosen = select.value;
    select.replaceChildren(...listing.data.map((m) => el("option", m.id)));
    if (chosen) select.value = chosen;
    if (Console.who.admin) await Models.learnPlans();
  },

  body() {
    const body = { model: value("pg-model"), stream: true, stream_options: { include_usage: true },
                   max_tokens: Number(value("pg-max-tokens")), temperature: Number(value("pg-temperature")),
                   top_p: Number(value("pg-top-p")), messages: [] };
    if (value("pg-seed")) body.seed = Number(value("pg-seed"));
    if (value("pg-system")) body.messages.push({ role: "system", content: value("pg-system") });
    body.messages.push({ role: "user", content: value("pg-message") });
    const extra = value("pg-schema");
    const parsed = extra ? JSON.parse(extra) : null;
    if (document.getElementById("pg-tools").checked) body.tools = parsed;
    const format = value("pg-format");
    if (format === "json_object") body.response_format = { type: "json_object" };
    if (format === "json_schema") body.response_format = { type: "json_schema", json_schema: { name: "answer", schema: parsed } };
    return body;
  },

  async send() {
    const output = document.getElementById("pg-output");
    const error = document.getElementById("pg-error");
    output.textContent = "";
    error.textContent = "";
    let body;
    try { body = this.body(); } catch (e) { error.textContent = `the JSON field is not valid JSON: ${e.message}`; return; }
    const started = performance.now();
    const facts = { firstToken: null, model: null, finish: null, usage: null, toolCalls: [], redactions: null };
    const response = await fetch("/v1/chat/completions", { method: "POST", body: JSON.stringify(body),
      headers: Console.headers({ "Content-Type": "application/json", "x-sla-class": value("pg-class") }) });
    if (!response.ok) { error.textContent = await errorText(response); return; }
    await readEvents(response, (name, data) => {
      if (data === "[DONE]") return;
      const chunk = JSON.parse(data);
      if (chunk.error) { error.textContent = chunk.error.message; return; }
      facts.model = chunk.model || facts.model;
      if (chunk.usage) facts.usage = chunk.usage;
      if (chunk.mcp_redactions) facts.redactions = chunk.mcp_redactions;
      for (const choice of chunk.choices || []) {
        const delta = choice.delta || {};
        if (delta.content) {
          if (facts.firstToken === null) facts.firstToken = performance.now() - started;
          output.textContent += delta.content;
        }
        if (delta.tool_calls) facts.toolCalls.push(...delta.tool_calls);
        if (choice.finish_reason) facts.finish = choice.finish_reason;
      }
    });
    this.show(facts, performance.now() - started);
  },

  show(facts, totalMs) {
    const rows = [["Served by", facts.model], ["Finish", facts.finish],
                  ["First token", facts.firstToken === null ? "–" : `${facts.firstToken.toFixed(0)} ms`],
                  ["Total", `${totalMs.toFixed(0)} ms`]];
    if (facts.usage) {
      const n = facts.usage.completion_tokens;
      rows.push(["Tokens", `${facts.usage.prompt_tokens} prompt, ${n} completion`]);
      if (n > 1 && facts.firstToken !== null) rows.push(["Time per output token", `${((totalMs - facts.firstToken) / (n - 1)).toFixed(1)} ms`]);
    }
    for (const call of facts.toolCalls) if (call.function) rows.push(["Tool call", `${call.function.name || ""} ${call.function.arguments || ""}`]);
    if (facts.redactions) rows.push(["Redacted", redactionText(facts.redactions)]);
    const plan = Models.plans[facts.model];
    if (plan) rows.push(["Precision plan", plan]);
    document.getElementById("pg-timings").replaceChildren(...rows.flatMap(([k, v]) => [el("dt", k), el("dd", v)]));
  },
};

const Models = {
  plans: {},

  async learnPlans() {
    const versions = await Console.api("/console/api/models");
    for (const v of versions) this.plans[`${v.name}:${v.version}`] = this.plan(v);
    return versions;
  },

  async enter() {
    const versions = await this.learnPlans();
    fillTable(document.getElementById("models-table"), versions.map((v) => [
      `${v.name}:${v.version}`, v.current ? "yes" : "no", v.file, this.plan(v), fmtBytes(v.file_bytes),
      this.memory(v), v.in_flight, fmtS(v.load_to_ready_s), this.actions(v)]));
  },

  memory(v) {
    if (v.memory_measure === "worker_rss") {
      const weights = v.weight_bytes === null ? "" : `, weights ${fmtBytes(v.weight_bytes)}`;
      return `${fmtBytes(v.memory_bytes)} (worker process RSS${weights})`;
    }
    return `${fmtBytes(v.memory_bytes)} (weights, in the server process)`;
  },

  plan(v) {
    return `${v.precision}: ` + Object.entries(v.plan).map(([k, n]) => `${n} ${k}`).join(", ");
  },

  actions(v) {
    const cell = el("span");
    if (!v.current) cell.append(this.button(`Make ${v.name}:${v.version} current`, "Make current",
      () => Console.api(`/admin/models/${encodeURIComponent(v.name)}/swap`, { method: "POST", body: JSON.stringify({ version: v.version }) })));
    cell.append(" ", this.button(`Unload ${v.name}:${v.version}`, "Unload",
      () => Console.api(`/admin/models/${encodeURIComponent(v.name)}/versions/${encodeURIComponent(v.version)}`, { method: "DELETE" })));
    return cell;
  },

  button(question, label, action) {
    const button = el("button", label, { type: "button", class: "secondary", "aria-label": question });
    button.addEventListener("click", () => this.confirmed(question, action));
    return button;
  },

  async confirmed(question, action) {
    const result = document.getElementById("models-result");
    if (!window.confirm(`${question}?`)) { result.textContent = "Cancelled."; return; }
    result.textContent = `${question}: working…`;
    try {
      const answer = await action();
      const versions = answer.data || [answer];
      result.textContent = `${question}: done (` + versions.map((v) => `${v.name}:${v.version}${v.current ? " current" : ""}`).join(", ") + ")";
      result.className = "ok";
    } catch (e) {
      result.textContent = `${question}: ${e.message}`;
      result.className = "error";
    }
    await this.enter();
  },

  load() {
    const body = { name: value("load-name"), version: value("load-version"), source: value("load-source"),
                   activate: !document.getElementById("load-standby").checked };
    if (value("load-precision")) body.precision = value("load-precision");
    const how = body.activate ? "Load and make current" : "Load on standby";
    return this.confirmed(`${how} ${body.name}:${body.version}`, () => Console.api("/admin/models", { method: "POST", body: JSON.stringify(body) }));
  },
};

const Tenants = {
  async enter() {
    const rows = await Console.api("/console/api/tenants");
    fillTable(document.getElementById("tenants-table"), rows.map((t) => [
      t.name, t.role, t.key_prefixes.map((p) => p + "…").join(", ") || "(open)",
      `${t.requests_last_minute} / ${t.requests_per_minute ?? "∞"}`,
      `${t.tokens_last_minute} / ${t.tokens_per_minute ?? "∞"}`, t.refused]));
  },
};

const Audit = {
  async enter() {
    if (!Console.who.audit) { report("audit", new Error("the audit trail is off on this server")); return; }
    const query = new URLSearchParams();
    for (const [key, id] of [["tenant", "au-tenant"], ["status", "au-status"], ["decision", "au-decision"], ["model", "au-model"], ["limit", "au-limit"]]) {
      if (value(id)) query.set(key, value(id));
    }
    for (const [key, id] of [["since", "au-since"], ["until", "au-until"]]) {
      if (value(id)) query.set(key, String(Date.parse(value(id) + "Z") / 1000));
    }
    document.getElementById("audit-error").textContent = "";
    const found = await Console.api("/console/api/audit?" + query);
    fillTable(document.getElementById("audit-table"), found.data.map((r) => [
      r.seq, fmtTime(r.at_us), r.tenant, r.model ? `${r.model}:${r.model_version}` : null, r.route, r.status,
      r.decisions.map((d) => `${d.stage} ${d.action}${d.rules.length ? " (" + d.rules.join(", ") + ")" : ""}`).join("; "),
      `${r.prompt_tokens} + ${r.completion_tokens}`, fmtS(r.latency_us / 1e6)]));
  },

  async verify() {
    const out = document.getElementById("audit-verify-result");
    out.textContent = "Checking…";
    const result = await Console.api("/console/api/audit/verify", { method: "POST" });
    out.className = result.ok ? "ok" : "error";
    out.textContent = result.ok
      ? `Chain ok: ${result.num_records} records, head ${result.head_seq} ${result.head_hash}`
      : `Chain FAILED: ${result.problems.join("; ")}`;
  },

  async erase() {
    const out = document.getElementById("erase-result");
    const body = { tenant: value("er-tenant"), user: value("er-user") };
    if (!window.confirm(`Erase user ${body.user} of tenant ${body.tenant}? Their key and captured texts are destroyed.`)) {
      out.textContent = "Cancelled."; return;
    }
    const r = await Console.api("/console/api/audit/erase", { method: "POST", body: JSON.stringify(body) });
    out.textContent = `Subject ${r.subject}: key ${r.key_destroyed ? "destroyed" : "none was kept"}, ` +
      `${r.num_captures} capture(s) deleted, ${r.num_records} record(s) kept (hashes only; the chain still verifies)`;
  },
};

const Compliance = {
  async enter() {
    const gaps = await Console.api("/console/api/compliance/gaps?framework=" + value("co-framework"));
    document.getElementById("gaps-list").replaceChildren(...gaps.data.map((c) =>
      el("li", `${c.framework} ${c.article} — ${c.title}: no control for ${c.concepts.join(", ")}`)));
    const listing = await Console.api("/v1/models");
    document.getElementById("co-model").replaceChildren(...listing.data.map((m) => el("option", m.id)));
  },

  async showReport() {
    const link = await Console.api("/console/api/compliance/report-link?framework=" + value("co-framework"), { method: "POST" });
    const frame = document.getElementById("report-frame");
    frame.src = link.url;
    frame.hidden = false;
  },

  async bundle() {
    const out = document.getElementById("bundle-result");
    out.textContent = "Building and signing…";
    const response = await Console.api("/console/api/compliance/bundle", { method: "POST", body: JSON.stringify({ model: value("co-model") }) });
    const blob = await response.blob();
    const name = (response.headers.get("content-disposition") || "").split('filename="')[1]?.replace('"', "") || "evidence.ceb";
    const link = el("a", `Download ${name}`, { href: URL.createObjectURL(blob), download: name });
    out.replaceChildren(`Signed bundle ready (${blob.size} bytes): `, link);
    link.click();
  },
};

const Pages = {
  overview: Overview, playground: Playground, models: Models, tenants: Tenants, audit: Audit, compliance: Compliance,

  bind() {
    const on = (id, page, action) => document.getElementById(id).addEventListener("submit", (event) => {
      event.preventDefault();
      action().catch((e) => report(page, e));
    });
    on("chat-form", "playground", () => Playground.send());
    on("load-form", "models", () => Models.load());
    on("audit-form", "audit", () => Audit.enter());
    on("erase-form", "audit", () => Audit.erase());
    on("report-form", "compliance", () => Compliance.showReport());
    on("bundle-form", "compliance", () => Compliance.bundle());
    document.getElementById("audit-verify").addEventListener("click", () => Audit.verify().catch((e) => report("audit", e)));
    document.getElementById("tenants-refresh").addEventListener("click", () => Tenants.enter().catch((e) => report("tenants", e)));
  },
};
