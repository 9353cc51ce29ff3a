// cmdgate console. Everything shown comes from the API and is put on the page as text
// (text nodes, textContent), never as HTML. The token lives in sessionStorage and
// travels only in the Authorization header.
"use strict";

const $ = (sel) => document.querySelector(sel);
const state = { token: sessionStorage.getItem("cmdgate.token") || "", role: "", name: "", pending: new Map(), streamAbort: null, cursor: "" };

// el builds an element: attrs are properties (className, type, ...) or data-* / aria-*
// attributes; children are nodes or strings (as text).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith("data-") || k.startsWith("aria-")) e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(typeof c === "string" ? document.createTextNode(c) : c);
  }
  return e;
}

function showError(msg) { $("#error").textContent = msg || ""; }

async function api(method, path, body) {
  const opts = { method, headers: { Authorization: "Bearer " + state.token } };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const resp = await fetch(path, opts);
  let data = null;
  try { data = await resp.json(); } catch (e) { data = null; }
  if (!resp.ok) {
    const err = new Error((data && data.error && data.error.message) || ("HTTP " + resp.status));
    err.status = resp.status;
    err.code = data && data.error && data.error.code;
    throw err;
  }
  return data;
}

function ago(t) {
  const s = Math.max(0, Math.round((Date.now() - new Date(t).getTime()) / 1000));
  if (s < 60) return s + " s ago";
  if (s < 3600) return Math.round(s / 60) + " min ago";
  return Math.round(s / 3600) + " h ago";
}

function commandText(req) {
  if (req.command) return req.command;
  return (req.argv || []).map((w) => (/^[\w@%+=:,./-]+$/.test(w) ? w : "'" + w.replace(/'/g, "'\\''") + "'")).join(" ");
}

// ---- sign-in ----

async function signIn(token) {
  state.token = token;
  const me = await api("GET", "/v1/whoami");
  if (me.role === "agent") {
    throw new Error("This is an agent's token: the console is for approvers and auditors (and admins). Sign in with one of their tokens.");
  }
  sessionStorage.setItem("cmdgate.token", token);
  state.role = me.role;
  state.name = me.name;
  $("#who-name").textContent = me.name;
  $("#who-role").textContent = me.role;
  $("#who").hidden = false;
  $("#tabs").hidden = false;
  $("#signin").hidden = true;
  document.body.dataset.role = me.role;
  showTab("approvals");
  startStream();
  loadHistory();
}

function signOut() {
  sessionStorage.removeItem("cmdgate.token");
  if (state.streamAbort) state.streamAbort.abort();
  state.token = "";
  state.pending.clear();
  location.reload();
}

// ---- tabs ----

function showTab(name) {
  for (const b of document.querySelectorAll("nav .tab")) b.classList.toggle("active", b.dataset.tab === name);
  for (const p of document.querySelectorAll(".panel")) p.hidden = p.id !== name;
  showError("");
  if (name === "grants") loadGrants();
  if (name === "audit") { loadVerify(); loadAudit(false); }
}

// ---- approvals ----

function canDecide() { return state.role === "approver" || state.role === "admin"; }

function renderPending() {
  const box = $("#pending");
  const items = [...state.pending.values()].sort((a, b) => (a.id < b.id ? -1 : 1));
  box.replaceChildren(...items.map(approvalCard));
  $("#pending-count").textContent = String(items.length);
  $("#pending-empty").hidden = items.length > 0;
}

function approvalCard(a) {
  const asks = new Set(a.ask_commands || []);
  let commands = [];
  try { commands = typeof a.commands === "string" ? JSON.parse(a.commands) : (a.commands || []); } catch (e) { commands = []; }
  const card = el("article", { className: "approval", "data-id": a.id },
    el("div", { className: "meta" },
      "requested by ", el("strong", {}, a.principal.name), " (" + a.principal.role + ")",
      " · task " + a.task + " · " + ago(a.created_at) + " · expires " + new Date(a.expires_at).toLocaleTimeString() +
      " · policy " + (a.revision || "").slice(0, 12)),
    el("div", { className: "script" }, commandText(a.request)),
    el("div", { className: "meta" }, "in " + a.request.cwd),
    el("ol", { className: "commands", start: 0 }, ...commands.map((c) =>
      el("li", { className: asks.has(c.index) ? "asks" : "", "data-index": String(c.index) }, (c.argv || []).join(" ")))),
    el("ul", { className: "reasons" }, ...(a.reasons || []).map((r) => el("li", {}, r.rule + ": " + r.message))));
  if (canDecide()) card.append(decideForm(a));
  return card;
}

function decideForm(a) {
  const scope = el("select", { name: "scope" },
    el("option", { value: "once" }, "once"),
    el("option", { value: "command" }, "this command (again)"),
    el("option", { value: "prefix" }, "commands starting with…"),
    el("option", { value: "session" }, "this task (session)"));
  const prefix = el("input", { name: "prefix", placeholder: "e.g. npm publish --dry-run", hidden: true });
  const expiry = el("input", { name: "expires_in", placeholder: "expires in (8h)", size: 10, hidden: true });
  const comment = el("input", { name: "comment", placeholder: "comment (optional)" });
  scope.addEventListener("change", () => {
    prefix.hidden = scope.value !== "prefix";
    expiry.hidden = scope.value === "once";
  });
  const approve = el("button", { type: "button", className: "approve" }, "Approve");
  const deny = el("button", { type: "button", className: "deny" }, "Deny");
  const decide = async (verdict) => {
    const body = { comment: comment.value };
    if (verdict === "approve") {
      body.scope = scope.value;
      if (scope.value === "prefix") body.prefix = prefix.value;
      if (scope.value !== "once" && expiry.value) body.expires_in = expiry.value;
    }
    approve.disabled = deny.disabled = true;
    try {
      await api("POST", "/v1/approvals/" + encodeURIComponent(a.id) + "/" + verdict, body);
      state.pending.delete(a.id);
      renderPending();
      loadHistory();
    } catch (e) {
      showError(verdict + " " + a.id + ": " + e.message);
      approve.disabled = deny.disabled = false;
    }
  };
  approve.addEventListener("click", () => decide("approve"));
  deny.addEventListener("click", () => decide("deny"));
  return el("div", { className: "decide" }, scope, prefix, expiry, comment, approve, deny);
}

// startStream reads GET /v1/approvals/stream with fetch (EventSource cannot send the
// Authorization header) and keeps the pending queue current; it reconnects after a
// break.
async function startStream() {
  const ctrl = new AbortController();
  state.streamAbort = ctrl;
  for (;;) {
    try {
      const resp = await fetch("/v1/approvals/stream", { headers: { Authorization: "Bearer " + state.token }, signal: ctrl.signal });
      if (!resp.ok) throw new Error("HTTP " + resp.status);
      $("#stream-state").textContent = "· live";
      state.pending.clear();
      const reader = resp.body.getReader();
      const dec = new TextDecoder();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const data = block.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
          if (data) onEvent(JSON.parse(data));
        }
      }
    } catch (e) {
      if (ctrl.signal.aborted) return;
    }
    $("#stream-state").textContent = "· reconnecting";
    await new Promise((r) => setTimeout(r, 2000));
  }
}

function onEvent(ev) {
  const a = ev.approval;
  if (ev.type === "requested" && a.state === "pending") state.pending.set(a.id, a);
  else state.pending.delete(a.id);
  renderPending();
  if (ev.type !== "requested") loadHistory();
}

async function loadHistory() {
  try {
    const page = await api("GET", "/v1/approvals?limit=50");
    const rows = page.approvals.filter((a) => a.state !== "pending").map((a) =>
      el("tr", { "data-id": a.id },
        el("td", {}, ago(a.decided_at || a.created_at)),
        el("td", {}, a.state + (a.scope && a.scope !== "once" ? " (" + a.scope + ")" : "")),
        el("td", {}, a.principal.name),
        el("td", { className: "cmd" }, commandText(a.request)),
        el("td", {}, a.decided_by ? a.decided_by.name : ""),
        el("td", {}, a.comment || "")));
    $("#history tbody").replaceChildren(...rows);
  } catch (e) { showError("approvals: " + e.message); }
}

// ---- grants ----

async function loadGrants() {
  try {
    const page = await api("GET", "/v1/grants");
    const rows = page.grants.map((g) => {
      const covers = g.scope === "prefix" ? (g.prefix || []).join(" ") + " …"
        : g.scope === "command" ? (g.commands || []).map((c) => c.argv.join(" ") + " (in " + c.cwd + ")").join("; ")
        : "task " + g.task;
      const row = el("tr", { "data-id": g.id },
        el("td", {}, g.scope), el("td", {}, g.principal), el("td", { className: "cmd" }, covers),
        el("td", {}, g.uses + (g.max_uses ? " / " + g.max_uses : "")),
        el("td", {}, new Date(g.expires_at).toLocaleString()),
        el("td", {}, g.created_by.name), el("td", {}));
      if (canDecide()) {
        const b = el("button", { type: "button", className: "revoke" }, "Revoke");
        b.addEventListener("click", async () => {
          b.disabled = true;
          try { await api("DELETE", "/v1/grants/" + encodeURIComponent(g.id)); loadGrants(); } catch (e) { showError("revoke: " + e.message); b.disabled = false; }
        });
        row.lastChild.append(b);
      }
      return row;
    });
    $("#grant-list tbody").replaceChildren(...rows);
    $("#grants-empty").hidden = rows.length > 0;
  } catch (e) { showError("grants: " + e.message); }
}

// ---- audit ----

async function loadVerify() {
  const box = $("#verify");
  if (state.role === "approver") { box.textContent = ""; return; }
  try {
    const v = await api("GET", "/v1/audit/verify");
    box.className = "verify " + (v.ok ? "ok" : "bad");
    const head = v.head ? " · head #" + v.head.seq + " " + v.head.hash.slice(0, 16) : "";
    const cp = v.last_checkpoint ? " · last checkpoint #" + v.last_checkpoint.seq + " at " + v.last_checkpoint.time : "";
    box.textContent = (v.ok ? "Chain verified: " : "Chain BROKEN: ") + v.records + " records" + head + cp +
      (v.problem ? " · " + JSON.stringify(v.problem) : "");
  } catch (e) { box.className = "verify bad"; box.textContent = "verify: " + e.message; }
}

function summary(r) {
  if (r.kind === "decision" && r.input && r.input.request) return r.input.request.raw;
  if (r.kind === "execution" && r.execution) return "exit " + r.execution.exit_code + " in " + r.execution.duration_ms + " ms";
  if (r.reasons && r.reasons.length) return r.reasons[0].message;
  return r.detail ? JSON.stringify(r.detail) : "";
}

async function loadAudit(more) {
  if (state.role === "approver") { $("#records tbody").replaceChildren(); showError("The audit log needs an auditor's token."); return; }
  const q = new URLSearchParams({ limit: "50" });
  for (const [id, name] of [["#f-decision", "decision"], ["#f-principal", "principal"], ["#f-since", "since"], ["#f-until", "until"], ["#f-q", "q"]]) {
    if ($(id).value) q.set(name, $(id).value);
  }
  if (more && state.cursor) q.set("cursor", state.cursor);
  try {
    const page = await api("GET", "/v1/audit?" + q.toString());
    const rows = page.records.map((r) => {
      const row = el("tr", { "data-id": r.id }, el("td", {}, r.time), el("td", {}, r.kind), el("td", {}, r.principal.name),
        el("td", {}, r.decision), el("td", { className: "cmd" }, summary(r)));
      row.addEventListener("click", () => { const d = $("#record-detail"); d.textContent = JSON.stringify(r, null, 2); d.hidden = false; });
      return row;
    });
    if (more) $("#records tbody").append(...rows); else $("#records tbody").replaceChildren(...rows);
    state.cursor = page.next_cursor || "";
    $("#older").hidden = !state.cursor;
  } catch (e) { showError("audit: " + e.message); }
}

// ---- wiring ----

document.addEventListener("DOMContentLoaded", () => {
  $("#signin-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    $("#signin-error").textContent = "";
    try { await signIn($("#token").value.trim()); } catch (e) {
      state.token = "";
      sessionStorage.removeItem("cmdgate.token");
      $("#signin-error").textContent = e.status === 401 ? "The token is not valid." : e.message;
    }
  });
  $("#signout").addEventListener("click", signOut);
  for (const b of document.querySelectorAll("nav .tab")) b.addEventListener("click", () => showTab(b.dataset.tab));
  $("#audit-filter").addEventListener("submit", (ev) => { ev.preventDefault(); loadAudit(false); });
  $("#older").addEventListener("click", () => loadAudit(true));
  setInterval(() => { if (state.role) renderPending(); }, 30000); // ages
  if (state.token) signIn(state.token).catch(() => { sessionStorage.removeItem("cmdgate.token"); state.token = ""; });
});
