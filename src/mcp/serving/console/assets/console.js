// MCP 2026 console (the server's and the gateway's): sign-in, navigation, and the calls every page
// makes; pages.js or gateway_pages.js defines the pages. Plain JS, no build step;
// the key stays in this tab's session storage and goes out as "Authorization: Bearer" on each call.
"use strict";

const Console = {
  key: null,
  who: null,
  page: null,

  headers(extra) {
    return Object.assign({ Authorization: "Bearer " + this.key }, extra || {});
  },

  // A JSON call; a non-2xx answer throws an Error with the server's own message.
  async api(path, options) {
    const opts = Object.assign({}, options || {});
    opts.headers = this.headers(opts.body ? { "Content-Type": "application/json" } : {});
    const response = await fetch(path, opts);
    if (!response.ok) throw new Error(await errorText(response));
    const type = response.headers.get("content-type") || "";
    return type.includes("json") ? response.json() : response;
  },

  async signIn(key) {
    this.key = key;
    const who = await this.api("/console/api/whoami");
    this.who = who;
    sessionStorage.setItem("mcp-console-key", key);
    document.getElementById("who").textContent =
      `Signed in as tenant ${who.tenant} (${who.role})` + (who.open ? " — open server" : "");
    document.getElementById("sign-out").hidden = false;
    document.getElementById("nav").hidden = false;
    for (const el of document.querySelectorAll("[data-admin]")) el.hidden = !who.admin;
    for (const el of document.querySelectorAll("[data-user]")) el.hidden = who.admin;
    const first = [...document.querySelectorAll("nav button")].find((button) => !button.hidden);
    this.show(first.dataset.page);
  },

  signOut() {
    sessionStorage.removeItem("mcp-console-key");
    location.reload();
  },

  show(name) {
    if (this.page && Pages[this.page].leave) Pages[this.page].leave();
    for (const section of document.querySelectorAll(".page")) section.hidden = section.id !== "page-" + name;
    for (const button of document.querySelectorAll("nav button")) {
      if (button.dataset.page === name) button.setAttribute("aria-current", "page");
      else button.removeAttribute("aria-current");
    }
    this.page = name;
    document.getElementById("main").focus();
    document.body.dataset.loaded = ""; // set to the page's name once its data is in (tests wait on it)
    Pages[name].enter().then(() => { document.body.dataset.loaded = name; }).catch((error) => report(name, error));
  },
};

async function errorText(response) {
  try {
    const body = await response.json();
    if (body.error && body.error.message) return `${response.status}: ${body.error.message}`;
  } catch (ignored) { /* not JSON */ }
  return `${response.status} ${response.statusText}`;
}

// Server-sent events read with fetch (EventSource cannot send the key); calls onEvent(name, data).
async function readEvents(response, onEvent, signal) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  while (!signal || !signal.aborted) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) onEvent(name, data.join("\n"));
    }
  }
}

function report(page, error) {
  const target = document.querySelector(`#page-${page} .error`) || document.getElementById("sign-in-error");
  target.textContent = String(error.message || error);
}

function el(tag, text, attrs) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
  return node;
}

function fillTable(table, rows) {
  const body = table.querySelector("tbody");
  body.replaceChildren(...rows.map((cells) => {
    const tr = el("tr");
    for (const cell of cells) {
      const td = el("td");
      if (cell instanceof Node) td.append(cell); else td.textContent = cell === null || cell === undefined ? "–" : String(cell);
      tr.append(td);
    }
    return tr;
  }));
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("sign-in-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const error = document.getElementById("sign-in-error");
    error.textContent = "";
    Console.signIn(document.getElementById("api-key").value).catch((e) => { error.textContent = e.message; });
  });
  document.getElementById("sign-out").addEventListener("click", () => Console.signOut());
  for (const button of document.querySelectorAll("nav button")) {
    button.addEventListener("click", () => Console.show(button.dataset.page));
  }
  Pages.bind();
  const saved = sessionStorage.getItem("mcp-console-key");
  if (saved) Console.signIn(saved).catch(() => sessionStorage.removeItem("mcp-console-key"));
});
