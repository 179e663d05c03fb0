// The pagemind trace viewer: documents, runs and agents of the signed-in key, over the /v1 HTTP API.
//
// No build step, no dependencies. Every string that comes from the server or the user reaches the page
// through text nodes (textContent), never through HTML parsing: a document named like markup shows literally.

const KEY = "pagemind.key";
const app = document.getElementById("app");
const state = { key: sessionStorage.getItem(KEY), health: null, me: null, methods: null, model: null };
let route = { controller: new AbortController() };

// --- DOM ----------------------------------------------------------------------------------------
/** An element: attributes (on* are listeners, class/for/value set as properties), children as nodes or text. */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") el.addEventListener(name.slice(2), value);
    else if (name === "class") el.className = value;
    else if (name === "value") el.value = value;
    else if (name === "checked" || name === "disabled" || name === "selected") el[name] = Boolean(value);
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

const SVG = "http://www.w3.org/2000/svg";
function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined) continue;
    if (name.startsWith("on") && typeof value === "function") el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

function clear(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

// --- formatting ---------------------------------------------------------------------------------
const nf = new Intl.NumberFormat();
const num = (n) => (n === null || n === undefined ? "–" : nf.format(n));
const secs = (x) => (x === null || x === undefined ? "–" : x < 10 ? `${x.toFixed(2)} s` : x < 120 ? `${x.toFixed(1)} s` : `${Math.floor(x / 60)} min ${Math.round(x % 60)} s`);

function ago(t) {
  if (!t) return "–";
  const d = Date.now() / 1000 - t;
  if (d < 45) return "just now";
  if (d < 3600) return `${Math.round(d / 60)} min ago`;
  if (d < 86400) return `${Math.round(d / 3600)} h ago`;
  return new Date(t * 1000).toLocaleDateString(undefined, { year: "numeric", month: "short", day: "numeric" });
}
const when = (t) => h("time", { datetime: t ? new Date(t * 1000).toISOString() : null, title: t ? new Date(t * 1000).toLocaleString() : null }, ago(t));

function duration(run) {
  if (!run.started) return null;
  return (run.finished || Date.now() / 1000) - run.started;
}

function clip(text, n) {
  text = String(text ?? "");
  return text.length > n ? text.slice(0, n - 1) + "…" : text;
}

const plural = (unit) => ({ leaf: "leaves", text: "texts" }[unit] || `${unit}s`);
const compact = (value) => (typeof value === "string" ? value : JSON.stringify(value));

// --- API ----------------------------------------------------------------------------------------
class ApiError extends Error {
  constructor(status, detail, body) {
    super(detail);
    this.status = status;
    this.body = body;
  }
}

function authHeaders() {
  return state.key ? { Authorization: `Bearer ${state.key}` } : {};
}

/** Every item of a listing: its pages one after another, each named by the one before in its Link header. */
async function apiAll(path, { signal } = {}) {
  return api(path, { signal, pages: true });
}

async function api(path, { method = "GET", json, form, signal, pages = false } = {}) {
  const headers = { Accept: "application/json", ...authHeaders() };
  let body;
  if (json !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(json);
  } else if (form) body = form;
  const res = await fetch(path, { method, headers, body, signal: signal || route.controller.signal });
  if (res.status === 401 && state.health?.auth !== "none") {
    signOut("Your key was not accepted; sign in again.");
    throw new ApiError(401, "not signed in");
  }
  if (res.status === 204) return null;
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    const detail = data && data.detail !== undefined ? compact(data.detail) : text || res.statusText;
    throw new ApiError(res.status, `${res.status}: ${detail}`, data);
  }
  const next = pages && Array.isArray(data) && /<([^>]+)>;\s*rel="next"/.exec(res.headers.get("Link") || "");
  if (next) {
    const url = new URL(next[1], location.href);
    return data.concat(await api(url.pathname + url.search, { signal, pages }));
  }
  return data;
}

const enc = encodeURIComponent;

/** Follow a run's server-sent events with fetch (EventSource cannot send the key): each step, then the end.
 * Reconnects with Last-Event-ID after a dropped connection; keep-alive comments only mark the stream alive. */
async function followRun(runId, { onStep, onEnd, onStatus, signal }) {
  let last = null;
  let delay = 1000;
  while (!signal.aborted) {
    try {
      const headers = { Accept: "text/event-stream", ...authHeaders() };
      if (last !== null) headers["Last-Event-ID"] = String(last);
      const res = await fetch(`/v1/runs/${enc(runId)}/events`, { headers, signal, cache: "no-store" });
      if (res.status === 401) return signOut("Your key was not accepted; sign in again.");
      if (!res.ok || !res.body) throw new ApiError(res.status, `events: ${res.status}`);
      onStatus("live");
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      let event = { id: null, type: "", data: [] };
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let match;
        while ((match = /\r\n|\r(?!$)|\n/.exec(buffer))) {
          const line = buffer.slice(0, match.index);
          buffer = buffer.slice(match.index + match[0].length);
          if (line === "") {
            if (event.id !== null) last = event.id;
            if (event.data.length) {
              const data = JSON.parse(event.data.join("\n"));
              if (event.type === "end") {
                onStatus("ended");
                onEnd(data);
                return;
              }
              try {
                onStep(data, event.type || "message");
              } catch (err) {
                console.error(err);  // a drawing bug must not look like a dropped connection
              }
            }
            event = { id: null, type: "", data: [] };
            continue;
          }
          if (line.startsWith(":")) {
            onStatus("live");
            continue;
          }
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          let val = colon < 0 ? "" : line.slice(colon + 1);
          if (val.startsWith(" ")) val = val.slice(1);
          if (field === "data") event.data.push(val);
          else if (field === "event") event.type = val;
          else if (field === "id" && !val.includes("\0")) event.id = val;
          else if (field === "retry" && /^\d+$/.test(val)) delay = Number(val);
        }
      }
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof ApiError && err.status >= 400 && err.status < 500) {
        onStatus("error", err.message);
        return;
      }
    }
    if (signal.aborted) return;
    onStatus("reconnecting");
    await sleep(delay, signal);
  }
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

// --- shell --------------------------------------------------------------------------------------
function signOut(message) {
  state.key = null;
  state.me = null;
  sessionStorage.removeItem(KEY);
  location.hash = "#/signin";
  if (message) state.flash = message;
}

function renderWho() {
  const who = document.getElementById("who");
  const nav = document.getElementById("nav");
  nav.hidden = !state.me;
  if (!state.me) return clear(who);
  const model = state.model ? h("span", { class: "model", title: `${state.model.backend || ""}` }, state.model.model) : null;
  const out = state.health?.auth === "none" ? null
    : h("button", { class: "link", onclick: () => signOut() }, "Sign out");
  clear(who, model, h("span", { class: "user" }, state.me.name), out);
}

function markNav(section) {
  for (const a of document.querySelectorAll("#nav a")) {
    if (a.dataset.section === section) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

function errorBox(err) {
  return h("p", { class: "error", role: "alert" }, err instanceof Error ? err.message : String(err));
}

function statusPill(status) {
  return h("span", { class: `pill status-${status}` }, status);
}

function section(title, ...children) {
  return h("section", { class: "card" }, title ? h("h2", {}, title) : null, ...children);
}

async function start() {
  try {
    state.health = await api("/v1/health");
  } catch (err) {
    clear(app, errorBox(err));
    return;
  }
  window.addEventListener("hashchange", navigate);
  await navigate();
}

async function signedIn() {
  if (!state.me) {
    if (state.health.auth !== "none" && !state.key) return false;
    try {
      state.me = await api("/v1/me");
    } catch {
      return false;
    }
  }
  if (!state.model) api("/v1/models").then((m) => { state.model = m; renderWho(); }).catch(() => {});
  renderWho();
  return true;
}

async function navigate() {
  route.controller.abort();
  const controller = new AbortController();
  route = { controller };
  const path = location.hash.replace(/^#\/?/, "").split("?")[0];
  const [section = "documents", id] = path.split("/").filter(Boolean).map(decodeURIComponent);
  const ok = section !== "signin" && (await signedIn());
  if (controller.signal.aborted) return;
  if (!ok) {
    if (state.me) return void (location.hash = "#/documents");
    markNav(null);
    renderWho();
    return signInPage();
  }
  markNav(section);
  const pages = { documents: id ? documentPage : documentsPage, runs: id ? runPage : runsPage,
                  agents: id ? agentPage : agentsPage, libraries: id ? libraryPage : librariesPage };
  const page = pages[section] || documentsPage;
  clear(app);
  app.dataset.page = `${section}${id ? "-one" : ""}`;
  try {
    await page(id, controller.signal);
  } catch (err) {
    if (!controller.signal.aborted && !(err instanceof ApiError && err.status === 401)) append(app, errorBox(err));
  }
}

// --- sign in ------------------------------------------------------------------------------------
function signInPage() {
  app.dataset.page = "signin";
  const input = h("input", { type: "password", id: "key", name: "key", autocomplete: "off", required: true,
                             placeholder: "pm_…", spellcheck: "false" });
  const note = h("p", { class: "error", role: "alert", hidden: !state.flash }, state.flash || "");
  state.flash = null;
  const form = h("form", { class: "signin card", onsubmit: async (e) => {
    e.preventDefault();
    state.key = input.value.trim();
    try {
      state.me = await api("/v1/me");
      sessionStorage.setItem(KEY, state.key);
      if (location.hash === "#/documents") navigate();
      else location.hash = "#/documents";
    } catch (err) {
      state.key = null;
      note.hidden = false;
      note.textContent = err.status === 401 || err.message === "not signed in" ? "That key was not accepted." : err.message;
    }
  } },
  h("h1", {}, "Sign in"),
  h("p", { class: "muted" }, "Paste the API key that ", h("code", {}, "pagemind users create NAME"),
    " printed. It is kept in this tab only (session storage)."),
  h("label", { for: "key" }, "API key"), input, note,
  h("button", { type: "submit", class: "primary" }, "Sign in"));
  clear(app, form);
  input.focus();
}

// --- documents ----------------------------------------------------------------------------------
async function documentsPage() {
  const list = h("div", { class: "list-slot" }, h("p", { class: "muted" }, "Loading…"));
  clear(app, h("div", { class: "page-head" }, h("h1", {}, "Documents"),
                h("p", { class: "muted" }, "Texts you uploaded; open one to ask it a question.")),
        uploadForm(() => loadDocuments(list)), list);
  await loadDocuments(list);
}

async function loadDocuments(slot) {
  const docs = await apiAll("/v1/documents?limit=1000");
  if (!docs.length) return clear(slot, h("p", { class: "empty" }, "No documents yet. Upload a text file above."));
  clear(slot, h("table", { class: "table", id: "documents" },
    h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", { class: "num" }, "Words"), h("th", { class: "num" }, "Characters"),
                   h("th", {}, "Added"))),
    h("tbody", {}, docs.map((d) => h("tr", {},
      h("td", {}, h("a", { href: `#/documents/${enc(d.id)}`, class: "docname" }, d.name)),
      h("td", { class: "num" }, num(d.words)), h("td", { class: "num" }, num(d.chars)), h("td", {}, when(d.created)))))));
}

/** A form adding a file or a pasted text: to your documents (``library`` null), or to a library (its name, or
 * an input holding it). Its fields' ids start with ``prefix``. */
function uploadForm(done, library = null, prefix = "upload") {
  const file = h("input", { type: "file", name: "file", id: `${prefix}-file`,
                            accept: library === null ? ".txt,.md,.text,text/*" : ".txt,.md,.text,.html,.pdf,.epub,.docx,text/*" });
  const name = h("input", { type: "text", name: "name", id: `${prefix}-name`, placeholder: "the file's name" });
  const text = h("textarea", { name: "text", id: `${prefix}-text`, rows: library === null ? 4 : 3, placeholder: "…or paste the text here" });
  const note = h("p", { class: "form-note", role: "status" });
  const button = h("button", { type: "submit", class: "primary" }, library === null ? "Upload" : "Add");
  const url = () => library === null ? "/v1/documents"
    : `/v1/libraries/${enc(typeof library === "string" ? library : library.value.trim())}/documents`;
  return h("form", { class: "card upload", id: prefix, onsubmit: async (e) => {
    e.preventDefault();
    note.className = "form-note";
    button.disabled = true;
    try {
      let put;
      if (file.files.length) {
        const form = new FormData();
        form.append("file", file.files[0]);
        if (name.value.trim()) form.append("name", name.value.trim());
        put = await api(url(), { method: "POST", form });
      } else if (text.value.trim()) {
        put = await api(url(), { method: "POST", json: { name: name.value.trim() || "pasted text", text: text.value } });
      } else {
        throw new Error("Choose a file or paste some text.");
      }
      const doc = put.document || put;  // a library answers what it did with the document
      note.textContent = `${{ updated: "Updated", unchanged: "Already there:" }[doc.status] || "Added"} “${doc.name}” (${num(doc.words)} words).`;
      file.value = "";
      text.value = "";
      name.value = "";
      await done();
    } catch (err) {
      note.className = "form-note error";
      note.textContent = err.message;
    } finally {
      button.disabled = false;
    }
  } },
  h("h2", {}, library === null || typeof library === "string" ? "Add a document" : "Add a document to a library"),
  library === null || typeof library === "string" ? null : h("div", {}, h("label", { for: library.id }, "Library"), library),
  h("div", { class: "grid2" },
    h("div", {}, h("label", { for: `${prefix}-file` }, library === null ? "Text file" : "File"), file),
    h("div", {}, h("label", { for: `${prefix}-name` }, library === null ? "Name " : "Name in the library ",
                   h("span", { class: "muted" }, "(optional)")), name)),
  text, h("div", { class: "actions" }, button, note));
}

async function documentPage(id, signal) {
  const [doc, methods] = await Promise.all([api(`/v1/documents/${enc(id)}`), loadMethods()]);
  const runsSlot = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  clear(app,
    h("div", { class: "page-head" },
      h("p", { class: "crumbs" }, h("a", { href: "#/documents" }, "Documents")),
      h("h1", { class: "docname" }, doc.name),
      h("p", { class: "facts" }, `${num(doc.words)} words · ${num(doc.chars)} characters · added `, when(doc.created))),
    h("div", { class: "columns" },
      h("div", {}, askForm(doc, methods)),
      h("div", {},
        section("Memories", doc.memories?.length
          ? h("ul", { class: "plain memories" }, doc.memories.map((m) => h("li", {},
              h("strong", {}, m.method), " ", statusPill(m.status || "done"), h("div", { class: "muted small mono" }, clip(m.key, 48)))))
          : h("p", { class: "muted" }, "None yet: the first question builds one.")),
        section("Runs", runsSlot),
        h("p", {}, h("button", { class: "danger link", onclick: async () => {
          if (!confirm(`Delete “${doc.name}”?`)) return;
          await api(`/v1/documents/${enc(id)}`, { method: "DELETE" });
          location.hash = "#/documents";
        } }, "Delete this document")))));
  const runs = await api(`/v1/runs?target=${enc(id)}&limit=20`, { signal });
  clear(runsSlot, runs.length ? runTable(runs, { compact: true }) : h("p", { class: "muted" }, "No runs yet."));
}

// --- libraries ----------------------------------------------------------------------------------
async function librariesPage() {
  const list = h("div", { class: "list-slot" }, h("p", { class: "muted" }, "Loading…"));
  const name = h("input", { type: "text", id: "library-name", required: true, maxlength: 100, placeholder: "reports" });
  clear(app, h("div", { class: "page-head" }, h("h1", {}, "Libraries"),
                h("p", { class: "muted" }, "Named sets of documents, asked as one; every citation names its document.")),
        uploadForm(() => loadLibraries(list), name, "library-upload"), list);
  await loadLibraries(list);
}

async function loadLibraries(slot) {
  const libs = await apiAll("/v1/libraries?limit=1000");
  if (!libs.length) return clear(slot, h("p", { class: "empty" }, "No libraries yet. Add a document to a new one above."));
  clear(slot, h("table", { class: "table", id: "libraries" },
    h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", { class: "num" }, "Documents"), h("th", { class: "num" }, "Words"),
                   h("th", {}, "Created"))),
    h("tbody", {}, libs.map((l) => h("tr", {},
      h("td", {}, h("a", { href: `#/libraries/${enc(l.name)}`, class: "docname" }, l.name)),
      h("td", { class: "num" }, num(l.document_count)), h("td", { class: "num" }, num(l.words)), h("td", {}, when(l.created)))))));
}

async function libraryPage(name) {
  const [lib, methods] = await Promise.all([api(`/v1/libraries/${enc(name)}`), loadMethods()]);
  const docs = h("div", {});
  const drawDocs = (l) => clear(docs, h("table", { class: "table", id: "library-documents" },
    h("thead", {}, h("tr", {}, h("th", {}, "Document"), h("th", { class: "num" }, "Words"), h("th", {}, "Added"), h("th", {}))),
    h("tbody", {}, l.documents.map((d) => h("tr", {},
      h("td", { class: "docname" }, d.name), h("td", { class: "num" }, num(d.words)), h("td", {}, when(d.added)),
      h("td", {}, h("button", { class: "link danger", onclick: async () => {
        await api(`/v1/libraries/${enc(name)}/documents/${d.name.split("/").map(enc).join("/")}`, { method: "DELETE" });
        drawDocs(await api(`/v1/libraries/${enc(name)}`));
      } }, "Remove")))))));
  drawDocs(lib);
  clear(app,
    h("div", { class: "page-head" },
      h("p", { class: "crumbs" }, h("a", { href: "#/libraries" }, "Libraries")),
      h("h1", { class: "docname" }, lib.name),
      h("p", { class: "facts" }, `${num(lib.document_count)} documents · ${num(lib.words)} words · created `, when(lib.created))),
    h("div", { class: "columns" },
      h("div", {}, askForm(lib, methods, `/v1/libraries/${enc(name)}/ask`)),
      h("div", {},
        section("Documents", docs),
        uploadForm(async () => drawDocs(await api(`/v1/libraries/${enc(name)}`)), name, "library-upload"),
        h("p", {}, h("button", { class: "danger link", onclick: async () => {
          if (!confirm(`Delete the library “${lib.name}”?`)) return;
          await api(`/v1/libraries/${enc(name)}`, { method: "DELETE" });
          location.hash = "#/libraries";
        } }, "Delete this library")))));
}

async function loadMethods() {
  if (!state.methods) state.methods = await api("/v1/methods");
  return state.methods;
}

function askForm(doc, methods, url = `/v1/documents/${enc(doc.id)}/ask`) {
  const question = h("textarea", { id: "question", name: "question", rows: 3, required: true,
                                   placeholder: "What does the narrator find in the attic?" });
  const choices = h("textarea", { id: "choices", name: "choices", rows: 3, placeholder: "One option per line (optional)" });
  const picker = h("select", { id: "method", name: "method" },
    methods.map((m) => h("option", { value: m.name, selected: m.name === "auto" }, m.title && m.title !== m.name ? `${m.title} (${m.name})` : m.name)));
  const about = h("p", { class: "muted small" });
  const optionsSlot = h("div", { class: "option-grid" });
  const budget = h("input", { type: "number", id: "budget", min: 1, step: 1, placeholder: "none" });
  const note = h("p", { class: "form-note", role: "status" });
  const button = h("button", { type: "submit", class: "primary", id: "ask" }, "Ask");
  let fields = [];
  const pick = () => {
    const m = methods.find((x) => x.name === picker.value);
    clear(about, m?.summary || "", m?.paper ? ` — ${m.paper}` : "");
    fields = optionFields(m?.schema || m?.options || {}, ["budget"]);  // the budget has its own field
    clear(optionsSlot, fields.length ? fields.map((f) => f.row) : h("p", { class: "muted small" }, "This method has no options."));
  };
  picker.addEventListener("change", pick);
  pick();
  return h("form", { class: "card ask", id: "ask-form", onsubmit: async (e) => {
    e.preventDefault();
    note.className = "form-note";
    button.disabled = true;
    try {
      const body = { question: question.value.trim(), method: picker.value, method_options: {},
                     options: choices.value.split("\n").map((x) => x.trim()).filter(Boolean),
                     budget: budget.value ? Number(budget.value) : null };
      for (const f of fields) {
        const v = f.read();
        if (v !== undefined) body.method_options[f.name] = v;
      }
      const run = await api(`${url}?wait=false`, { method: "POST", json: body });
      location.hash = `#/runs/${enc(run.id || run.run_id)}`;
    } catch (err) {
      note.className = "form-note error";
      note.textContent = err.message;
      button.disabled = false;
    }
  } },
  h("h2", {}, "Ask"),
  h("label", { for: "question" }, "Question"), question,
  h("label", { for: "choices" }, "Multiple-choice options ", h("span", { class: "muted" }, "(optional)")), choices,
  h("div", { class: "grid2" },
    h("div", {}, h("label", { for: "method" }, "Method"), picker),
    h("div", {}, h("label", { for: "budget" }, "Token budget ", h("span", { class: "muted" }, "(optional)")), budget)),
  about,
  h("details", { class: "method-options" }, h("summary", {}, "Method options"), optionsSlot),
  h("div", { class: "actions" }, button, note));
}

/** Form controls for a JSON schema's properties; each field's read() is undefined when left at its default. */
function optionFields(schema, skip = []) {
  const props = schema.properties || {};
  return Object.entries(props).filter(([name]) => !skip.includes(name)).map(([name, p]) => {
    const types = Array.isArray(p.type) ? p.type : [p.type];
    const id = `opt-${name}`;
    let control;
    let read;
    const dflt = p.default === undefined ? (types.includes("null") ? "none" : "") : compact(p.default);
    if (p.enum || types.includes("boolean")) {
      const values = p.enum || [true, false];
      control = h("select", { id, name }, h("option", { value: "" }, `default (${dflt})`),
                  values.map((v) => h("option", { value: JSON.stringify(v) }, compact(v))));
      read = () => (control.value === "" ? undefined : JSON.parse(control.value));
    } else if (types.includes("integer") || types.includes("number")) {
      control = h("input", { type: "number", id, name, placeholder: dflt, min: p.minimum, max: p.maximum,
                             step: types.includes("integer") ? 1 : "any" });
      read = () => (control.value === "" ? undefined : Number(control.value));
    } else if (types.includes("array")) {
      control = h("input", { type: "text", id, name, placeholder: dflt || "comma-separated" });
      read = () => (control.value.trim() === "" ? undefined : control.value.split(",").map((x) => x.trim()).filter(Boolean));
    } else {
      control = h("input", { type: "text", id, name, placeholder: dflt });
      read = () => (control.value === "" ? undefined : control.value);
    }
    const row = h("div", { class: "option" }, h("label", { for: id, class: "mono" }, name), control,
                  p.description ? h("p", { class: "hint" }, p.description) : null);
    return { name, row, read };
  });
}

// --- runs ---------------------------------------------------------------------------------------
const KINDS = ["", "ask", "index", "turn", "consolidate", "read"];
const STATUSES = ["", "queued", "running", "done", "failed", "cancelled"];

async function runsPage(_id, signal) {
  const params = new URLSearchParams(location.hash.split("?")[1] || "");
  const kind = h("select", { id: "filter-kind" }, KINDS.map((k) => h("option", { value: k }, k || "any kind")));
  const status = h("select", { id: "filter-status" }, STATUSES.map((k) => h("option", { value: k }, k || "any status")));
  const target = h("input", { type: "search", id: "filter-target", placeholder: "document or agent id" });
  const slot = h("div", {});
  let offset = 0;
  const limit = 50;
  const load = async () => {
    const q = new URLSearchParams({ limit: String(limit), offset: String(offset) });
    if (kind.value) q.set("kind", kind.value);
    if (status.value) q.set("status", status.value);
    if (target.value.trim()) q.set("target", target.value.trim());
    const runs = await api(`/v1/runs?${q}`, { signal });
    const pager = h("div", { class: "pager" },
      h("button", { class: "link", disabled: offset === 0, onclick: () => { offset = Math.max(0, offset - limit); load(); } }, "← Newer"),
      h("span", { class: "muted small" }, runs.length ? `${offset + 1}–${offset + runs.length}` : ""),
      h("button", { class: "link", disabled: runs.length < limit, onclick: () => { offset += limit; load(); } }, "Older →"));
    clear(slot, runs.length ? [runTable(runs), pager] : h("p", { class: "empty" }, "No runs match."));
    return runs;
  };
  for (const el of [kind, status]) el.addEventListener("change", () => { offset = 0; load(); });
  target.addEventListener("change", () => { offset = 0; load(); });
  if (params.get("kind")) kind.value = params.get("kind");
  if (params.get("target")) target.value = params.get("target");
  clear(app,
    h("div", { class: "page-head" }, h("h1", {}, "Runs"),
      h("p", { class: "muted" }, "Every index build, answer and agent turn, newest first.")),
    h("div", { class: "filters" }, kind, status, target, h("button", { class: "link", onclick: load }, "Refresh")),
    slot);
  await load();
  // keep the list fresh while something is under way
  while (!signal.aborted) {
    await sleep(4000, signal);
    if (signal.aborted || document.hidden || offset) continue;
    if (slot.querySelector(".status-running, .status-queued")) await load().catch(() => {});
  }
}

function runSubject(run) {
  const r = run.request || {};
  if (run.kind === "turn") return r.message ?? "";
  if (run.kind === "consolidate") return `consolidate the memory of ${r.agent ?? "the agent"}`;
  if (run.kind === "ask") return r.question ?? "";
  if (run.kind === "read") return `read ${r.document ?? "an upload"}`;
  return r.document ? `build memory of ${r.document}` : "build memory";
}

function runTable(runs, { compact: small = false } = {}) {
  return h("table", { class: `table runs${small ? " small" : ""}` },
    h("thead", {}, h("tr", {}, h("th", {}, "Status"), h("th", {}, "Kind"), small ? null : h("th", {}, "Method"),
                   h("th", {}, "What"), h("th", {}, "When"), h("th", { class: "num" }, "Time"))),
    h("tbody", {}, runs.map((run) => h("tr", { "data-run": run.id },
      h("td", {}, statusPill(run.status)),
      h("td", {}, run.kind),
      small ? null : h("td", { class: "mono small" }, run.method || ""),
      h("td", { class: "what" }, h("a", { href: `#/runs/${enc(run.id)}` }, clip(runSubject(run), 90) || run.id),
        !small && run.request?.document ? h("div", { class: "muted small docname" }, run.request.document)
          : !small && run.request?.agent ? h("div", { class: "muted small" }, `agent ${run.request.agent}`) : null),
      h("td", {}, when(run.created)),
      h("td", { class: "num" }, secs(duration(run)))))));
}

/** The cost of the recorded LLM calls (cached calls cost nothing), as the server's run summary counts it. */
function usageOf(steps) {
  const calls = steps.filter((x) => x.kind === "llm").map((x) => x.data);
  const paid = calls.filter((c) => !c.cached);
  const sum = (k) => paid.reduce((a, c) => a + (c[k] || 0), 0);
  return { calls: calls.length, cached_calls: calls.length - paid.length, prompt_tokens: sum("prompt_tokens"),
           completion_tokens: sum("completion_tokens"), seconds: sum("seconds") };
}

function costSummary(usage, run) {
  const cell = (label, value, id) => h("div", { class: "stat", "data-stat": id }, h("div", { class: "stat-value" }, value), h("div", { class: "stat-label" }, label));
  return h("div", { class: "stats", id: "cost" },
    cell("LLM calls", num(usage.calls), "calls"),
    cell("cached", num(usage.cached_calls), "cached"),
    cell("prompt tokens", num(usage.prompt_tokens), "prompt"),
    cell("completion tokens", num(usage.completion_tokens), "completion"),
    cell("model seconds", secs(usage.seconds), "seconds"),
    cell("wall time", secs(duration(run)), "wall"));
}

async function runPage(id, signal) {
  let run = await api(`/v1/runs/${enc(id)}`);
  const steps = [];
  const seen = new Set();
  const head = h("div", { class: "page-head" });
  const live = h("span", { class: "live", id: "live" });
  const cost = h("div", {});
  const outcome = h("div", {});
  const visual = h("div", { id: "visual" });
  const rows = h("ol", { class: "steps", id: "steps" });
  const cancel = h("button", { class: "link danger", onclick: async () => {
    run = await api(`/v1/runs/${enc(id)}/cancel`, { method: "POST" });
    drawHead();
  } }, "Cancel");

  const drawHead = () => {
    const r = run.request || {};
    const target = run.kind === "turn" || run.kind === "consolidate"
      ? h("a", { href: `#/agents/${enc(run.target)}` }, `agent ${r.agent || run.target}`)
      : run.kind === "read"
        ? (run.result?.document ? h("a", { href: `#/documents/${enc(run.result.document)}`, class: "docname" },
                                    run.target) : h("span", { class: "docname" }, run.target))
      : run.target.startsWith("lib-")
        ? h("a", { href: `#/libraries/${enc(r.document)}`, class: "docname" }, `library ${r.document}`)
        : h("a", { href: `#/documents/${enc(run.target)}`, class: "docname" }, r.document || run.target);
    clear(head,
      h("p", { class: "crumbs" }, h("a", { href: "#/runs" }, "Runs"), " / ", h("span", { class: "mono" }, run.id)),
      h("h1", { class: "run-title" }, clip(runSubject(run), 200) || run.kind),
      h("p", { class: "facts" }, statusPill(run.status), " ", h("span", { class: "kind" }, run.kind),
        run.method ? [" · ", h("span", { class: "mono" }, run.method)] : null, " · ", target, " · started ", when(run.started || run.created),
        " ", live, ["queued", "running"].includes(run.status) ? [" ", cancel] : null),
      r.options?.length ? h("ol", { class: "choices" }, r.options.map((o) => h("li", {}, o))) : null);
  };
  const drawCost = () => clear(cost, costSummary(usageOf(steps), run));
  const cited = h("div", { class: "cited", id: "cited", hidden: true });
  let sources = null;
  const show = (n) => showCitation(run.id, n, cited, signal);
  const drawOutcome = () => {
    clear(outcome);
    sources = sourcesList(run.result?.citations, show, run.target.startsWith("lib-"));
    if (run.error) append(outcome, h("div", { class: "card outcome failed" }, h("h2", {}, run.status === "cancelled" ? "Cancelled" : "Failed"), h("p", { class: "pre" }, run.error)));
    const res = run.result;
    if (!res) return;
    if (run.kind === "ask") {
      append(outcome, h("div", { class: "card outcome", id: "answer" }, h("h2", {}, "Answer"),
        res.letter ? h("p", { class: "letter" }, `(${res.letter})`) : null,
        h("p", { class: "answer pre" }, withMarkers(res.answer ?? "", res.citations, show)),
        sources, supportPanel(res),
        h("p", { class: "muted small" }, [
          res.pages_read?.length ? `${plural(res.read_unit || "page")} read: ${res.pages_read.join(", ")}` : `no ${plural(res.read_unit || "page")} read`,
          res.compression_rate !== null && res.compression_rate !== undefined ? ` · compression ${res.compression_rate.toFixed(1)}%` : "",
          res.context_words ? ` · longest context ${num(res.context_words)} words` : ""].join("")),
        res.fallbacks?.length ? h("ul", { class: "fallbacks" }, res.fallbacks.map((f) => h("li", {}, f))) : null,
        cited));
    } else if (run.kind === "turn") {
      const said = res.messages || [];
      append(outcome, h("div", { class: "card outcome", id: "answer" }, h("h2", {}, "Replies"),
        said.map((m, i) => h("p", { class: "bubble agent pre" }, i === said.length - 1 ? withMarkers(m, res.citations, show) : m)),
        sources, supportPanel(res), cited,
        h("p", { class: "muted small" }, `stopped: ${res.stop_reason || "–"} · ${num(res.valid_actions)} valid / ${num(res.invalid_actions)} invalid steps`,
          res.evictions ? ` · ${res.evictions} eviction${res.evictions > 1 ? "s" : ""}` : "",
          res.warnings ? ` · ${res.warnings} memory-pressure warning${res.warnings > 1 ? "s" : ""}` : "")),
        recalledCard(res.recalled));
    } else if (run.kind === "consolidate") {
      append(outcome, h("div", { class: "card outcome", id: "answer" }, h("h2", {}, "Memory consolidated"),
        h("p", {}, `read ${num(res.messages)} messages in ${num(res.windows)} windows: stored ${num((res.stored || []).length)} passages (${num(res.known)} already known; left out: ${num(res.junk)} with nothing to tell, ${num(res.ungrounded)} the messages do not hold)`),
        (res.versions || []).length ? h("ul", {}, res.versions.map(([label, version]) => h("li", {}, `${label}: version ${version}`))) : null,
        (res.problems || []).length ? h("ul", { class: "fallbacks" }, res.problems.map((p) => h("li", {}, p))) : null));
    } else {
      append(outcome, h("div", { class: "card outcome", id: "answer" }, h("h2", {}, "Memory built"),
        h("p", { class: "mono small" }, res.memory || ""),
        res.describe ? h("pre", { class: "describe" }, typeof res.describe === "string" ? res.describe : JSON.stringify(res.describe, null, 2)) : null));
    }
  };
  let visualDrawn = false;
  const drawVisual = async () => {
    if (visualDrawn || !run.result?.memory || run.kind === "turn" || run.kind === "consolidate") return;
    visualDrawn = true;
    const doc = run.result.document || run.target;
    try {
      const memory = await api(`/v1/documents/${enc(doc)}/memories/${enc(run.result.memory)}`, { signal });
      clear(visual, methodVisual(memory, run.result, steps));
    } catch (err) {
      if (!signal.aborted) clear(visual, h("p", { class: "muted small" }, `Memory not shown: ${err.message}`));
    }
  };
  const stepList = new StepList(rows, run.kind);

  drawHead();
  drawCost();
  drawOutcome();
  clear(app, head, h("div", { class: "run-body" },
    h("div", { class: "run-main" }, outcome, visual,
      section("Steps", h("p", { class: "muted small", id: "steps-empty" }, "Waiting for the first step…"), rows)),
    h("aside", { class: "run-side" }, section("Cost", cost), section("Request", requestFacts(run)))));

  const timer = setInterval(() => { if (["running", "queued"].includes(run.status)) drawCost(); }, 1000);
  signal.addEventListener("abort", () => clearInterval(timer));
  const setLive = (st, message) => {
    live.className = `live live-${st}`;
    live.textContent = { live: "live", reconnecting: "reconnecting…", ended: "", error: message || "stream failed" }[st] ?? st;
  };
  await followRun(id, {
    signal,
    onStatus: setLive,
    onStep: (step) => {
      if (seen.has(step.seq)) return;
      seen.add(step.seq);
      steps.push(step);
      document.getElementById("steps-empty")?.remove();
      if (run.status === "queued") { run.status = "running"; run.started = run.started || step.created; drawHead(); }
      stepList.add(step);
      drawCost();
      if (step.kind === "result") {
        run.result = step.data;
        drawOutcome();
        drawVisual();
      }
    },
    onEnd: (final) => {
      run = { ...run, ...final };
      drawHead();
      drawCost();
      drawOutcome();
      drawVisual();
      if (!steps.length) document.getElementById("steps-empty")?.replaceChildren("No steps were recorded.");
    },
  });
}

// --- citations ---------------------------------------------------------------------------------
/** The answer's text with its citation markers [n] as links: the markers the text holds, else all after it. */
function withMarkers(text, citations, show) {
  const count = (citations || []).length;
  if (!count) return text;
  const marker = (n) => h("a", { class: "marker", href: `#cite-${n}`, "data-n": n, title: citations[n - 1].location || "",
    onclick: (e) => { e.preventDefault(); show(n); } }, `[${n}]`);
  const parts = [];
  let at = 0;
  let found = false;
  for (const m of text.matchAll(/\[(\d+)\]/g)) {
    const n = Number(m[1]);
    if (n < 1 || n > count) continue;
    parts.push(text.slice(at, m.index), marker(n));
    at = m.index + m[0].length;
    found = true;
  }
  parts.push(text.slice(at));
  if (!found) parts.push(" ", Array.from({ length: count }, (_, i) => marker(i + 1)));
  return parts;
}

/** How well the sources support the answer: its one line, then each claim marked supported / partly / not, with
 * the markers of the sources holding it; an abstention shows the model's draft it replaced. */
function supportPanel(res) {
  const s = res.support;
  if (!s) return null;
  const mark = { supported: "✓", partial: "~", unsupported: "✗" };
  return h("div", { class: `support support-${s.label}`, id: "support" },
    h("h3", {}, "Support"),
    h("p", { class: "support-line" }, (res.abstained ? "abstained: " : "") + s.line),
    s.claims?.length ? h("ul", { class: "claims" }, s.claims.map((c) => h("li", { class: `claim claim-${c.label}`, title: `score ${c.score}` },
      h("span", { class: "claim-mark" }, mark[c.label] || "?"), " ", c.text,
      c.sources?.length ? h("span", { class: "mono small" }, " " + c.sources.map((n) => `[${n}]`).join("")) : null,
      c.missing?.length ? h("span", { class: "muted small" }, ` — not in the sources: ${c.missing.join(", ")}`) : null))) : null,
    res.abstained && res.draft ? h("p", { class: "draft muted" }, "The model's draft: ", h("q", {}, res.draft)) : null);
}

/** The sources list: each citation's marker, location and quote; a click opens it in its place. */
/** The sources an answer's markers name; over a library (``named``) each with the document it is in. */
function sourcesList(citations, show, named = false) {
  if (!citations?.length) return null;
  return h("div", { class: "sources" }, h("h3", {}, "Sources"),
    h("ol", { class: "sources-list" }, citations.map((c, i) => h("li", { id: `cite-${i + 1}` },
      h("a", { class: "marker", href: `#cite-${i + 1}`, "data-n": i + 1, onclick: (e) => { e.preventDefault(); show(i + 1); } }, `[${i + 1}]`), " ",
      named && c.document_name ? [h("span", { class: "docname source-doc" }, c.document_name), ", "] : null,
      h("span", { class: "mono small" }, c.location || c.unit), " ",
      c.found_by ? h("span", { class: "pill" }, c.found_by) : null, " ",
      h("q", { class: "quote" }, clip((c.quote || "").replace(/\s+/g, " "), 240))))));
}

/** Citation n of the run in its place (GET /v1/runs/{id}/citations/{n}): the text around it, its span highlighted
 * (the run's other cited spans there marked too). */
async function showCitation(runId, n, panel, signal) {
  panel.hidden = false;
  clear(panel, h("p", { class: "muted small" }, `Opening [${n}]…`));
  try {
    const got = await api(`/v1/runs/${enc(runId)}/citations/${n}`, { signal });
    const text = got.text;
    const spans = [...got.spans].sort((a, b) => a.start - b.start || (a.n === n ? -1 : 1));
    const nodes = [];
    let at = 0;
    for (const sp of spans) {
      if (sp.start < at) continue;
      nodes.push(text.slice(at, sp.start),
        h("mark", { class: sp.n === n ? "span current" : "span", "data-n": sp.n, title: `[${sp.n}]` }, text.slice(sp.start, sp.end)));
      at = sp.end;
    }
    nodes.push(text.slice(at));
    const c = got.citation;
    clear(panel,
      h("p", { class: "cited-head" }, h("strong", {}, `[${n}] `),
        c.document_name ? [h("span", { class: "docname" }, c.document_name), " · "] : null,
        h("span", { class: "mono small" }, c.location || c.unit),
        " · ", h("span", { class: "muted small" }, `characters ${num(c.start)}–${num(c.end)} of ${num(got.chars)}`),
        " ", h("button", { class: "link", onclick: () => { panel.hidden = true; } }, "Close")),
      h("p", { class: "cited-text pre" }, got.offset > 0 ? "… " : "", nodes, got.offset + text.length < got.chars ? " …" : ""));
    panel.querySelector("mark.current")?.scrollIntoView({ block: "nearest" });
  } catch (err) {
    if (!signal.aborted) clear(panel, errorBox(err));
  }
}

function requestFacts(run) {
  const r = run.request || {};
  const rows = Object.entries(r).filter(([k, v]) => !["question", "message", "options"].includes(k) && v !== null && v !== "" &&
    !(typeof v === "object" && !Object.keys(v).length));
  return h("dl", { class: "facts-list" },
    h("dt", {}, "run"), h("dd", { class: "mono" }, run.id),
    h("dt", {}, "created"), h("dd", {}, new Date(run.created * 1000).toLocaleString()),
    rows.map(([k, v]) => [h("dt", {}, k), h("dd", { class: typeof v === "object" ? "mono small" : "" }, compact(v))]));
}

const TURN_ROLES = { summarise: "summarise (eviction)" };  // an agent's summarise call evicts the queue's head
const MEMORY_EDITS = new Set(["core_memory_append", "core_memory_replace", "archival_memory_insert"]);

/** The run's steps as rows, added as they arrive; a phase updates its row in place while it goes on. */
class StepList {
  constructor(el, kind = "") {
    this.el = el;
    this.roles = kind === "turn" ? TURN_ROLES : {};
    this.calls = new Map();
    this.phase = null;
  }

  add(step) {
    const d = step.data || {};
    if (step.kind === "phase") {
      if (this.phase && this.phase.name === d.phase && this.phase.row === this.el.lastElementChild) {
        this.phase.update(d);
        return;
      }
      const bar = h("span", { class: "bar" }, h("span", {}));
      const count = h("span", { class: "muted small" });
      const update = (x) => {
        const unit = x.unit && (x.total || x.done) !== 1 && !x.unit.endsWith("s") ? `${x.unit}s` : x.unit || "";
        count.textContent = x.total ? `${num(x.done)} / ${num(x.total)} ${unit}` : `${num(x.done)} ${unit}`;
        bar.hidden = !x.total;
        bar.firstChild.style.width = x.total ? `${Math.min(100, (100 * x.done) / x.total)}%` : "0";
        if (!x.total && !x.done) count.textContent = "";
      };
      const row = this.row(step, "phase", h("span", { class: "phase-name" }, d.phase), bar, count);
      update(d);
      this.phase = { name: d.phase, row, update };
      return;
    }
    if (step.kind === "decision" && this.calls.has(d.call)) {
      append(this.calls.get(d.call), h("div", { class: "decision" }, h("span", { class: "label" }, "decision"), compact(d.decision)));
      return;
    }
    if (step.kind === "llm") {
      const body = h("div", { class: "step-body" },
        h("div", { class: "step-line" },
          h("span", { class: "role" }, this.roles[d.role] || d.role || "call"),
          d.cached ? h("span", { class: "pill cached" }, "cached") : null,
          h("span", { class: "tokens", title: "prompt → completion tokens" }, `${num(d.prompt_tokens)} → ${num(d.completion_tokens)} tok`),
          h("span", { class: "seconds" }, secs(d.seconds))),
        d.decision ? h("div", { class: "decision" }, h("span", { class: "label" }, "decision"), compact(d.decision)) : null,
        d.reply ? h("details", { class: "reply" }, h("summary", {}, d.role === "agent-step" ? "raw reply"
          : clip(d.reply.replace(/\s+/g, " "), 110)), h("pre", {}, d.reply)) : null);
      this.calls.set(step.seq, body);
      this.row(step, "llm", body);
      return;
    }
    if (step.kind === "step") return this.row(step, "agent", agentStep(d));
    // every other step is its one line of text, worded by the server (pagemind.steps.line) for every client
    if (step.kind === "note") return this.row(step, "note", h("span", { class: "note" }, stepText(step)));
    const known = ["decision", "error", "result"].includes(step.kind);
    return this.row(step, step.kind, h(known ? "span" : "code", { class: "step-text" }, stepText(step)));
  }

  row(step, kind, ...content) {
    const row = h("li", { class: `step step-${kind}`, "data-seq": step.seq, "data-kind": step.kind },
      h("span", { class: "seq mono" }, step.seq), h("span", { class: "kind-dot", title: step.kind }),
      h("div", { class: "step-content" }, content));
    this.el.append(row);
    return row;
  }
}

/** A step's one line as the server words it (``text``); a server older than it sent only the data. */
function stepText(step) {
  return step.text ?? clip(`${step.kind}: ${compact(step.data || {})}`, 200);
}

function agentStep(d) {
  const edit = MEMORY_EDITS.has(d.function);
  const args = d.arguments && Object.keys(d.arguments).length
    ? h("dl", { class: "args" }, Object.entries(d.arguments).map(([k, v]) => [h("dt", {}, k), h("dd", {}, compact(v))])) : null;
  return h("div", { class: "step-body" },
    d.thoughts ? h("p", { class: "thoughts" }, d.thoughts) : null,
    h("div", { class: "step-line" },
      h("span", { class: `call mono${edit ? " edit" : ""}` }, `${d.function || "(no function)"}()`),
      edit ? h("span", { class: "pill edit" }, "memory edit") : null,
      d.valid === false ? h("span", { class: "pill bad" }, "invalid") : null,
      d.status && d.status !== "OK" ? h("span", { class: "pill bad" }, d.status) : null,
      d.heartbeat ? h("span", { class: "pill" }, `heartbeat ${d.heartbeat}`) : null,
      d.prompt_tokens ? h("span", { class: "tokens" }, `${num(d.prompt_tokens)} tok in context`) : null),
    args,
    d.result ? h("details", { class: "reply" }, h("summary", {}, `result: ${clip(d.result.replace(/\s+/g, " "), 100)}`), h("pre", {}, d.result)) : null);
}

// --- method pictures ----------------------------------------------------------------------------
function methodVisual(memory, result, steps) {
  const items = memory.items || {};
  if (items.page && items.gist) return pageStrip(items, result);
  if (items.node) return walkTree(items.node, result);
  return null;
}

/** ReadAgent: one cell per page (the pages looked up are filled), then each page's gist beside its number. */
function pageStrip(items, result) {
  const looked = new Set(result.pages_read || []);
  const requested = new Set(result.details?.requested_pages || []);
  const shown = result.details?.gists_shown ? new Set(result.details.gists_shown) : null;
  const gists = new Map(items.gist.map((g) => [g.page, g]));
  const pages = [...items.page].sort((a, b) => a.index - b.index);
  const words = (t) => (t || "").split(/\s+/).filter(Boolean).length;
  const gistRows = h("ol", { class: "gists" });
  const strip = h("div", { class: "strip", id: "page-strip", role: "list" }, pages.map((p) => h("a", {
    role: "listitem", href: `#gist-${p.index}`, class: `cell${looked.has(p.index) ? " looked" : ""}${shown && !shown.has(p.index) ? " hidden-gist" : ""}`,
    title: `page ${p.index}: ${words(p.text)} words${looked.has(p.index) ? " — looked up" : ""}`, "data-page": p.index,
    onclick: (e) => { e.preventDefault(); document.getElementById(`gist-${p.index}`)?.scrollIntoView({ block: "center", behavior: "smooth" }); },
  }, p.index)));
  for (const p of pages) {
    const g = gists.get(p.index);
    gistRows.append(h("li", { id: `gist-${p.index}`, class: `gist${looked.has(p.index) ? " looked" : ""}` },
      h("div", { class: "gist-page" }, h("span", { class: "page-no" }, `p. ${p.index}`), h("span", { class: "muted small" }, `${num(words(p.text))} w`),
        looked.has(p.index) ? h("span", { class: "pill looked" }, "looked up") : requested.has(p.index) ? h("span", { class: "pill" }, "asked") : null),
      h("div", { class: "gist-text" }, g ? g.text : h("span", { class: "muted" }, "no gist yet"),
        g?.source === "fallback" ? h("span", { class: "pill bad" }, "fallback") : null,
        looked.has(p.index) ? h("details", { class: "reply" }, h("summary", {}, "page text"), h("pre", {}, p.text)) : null)));
  }
  const gistWords = items.gist.reduce((a, g) => a + words(g.text), 0);
  const pageWords = pages.reduce((a, p) => a + words(p.text), 0);
  return section("Gist memory",
    h("p", { class: "muted small" }, `${pages.length} pages · ${num(pageWords)} words → ${num(gistWords)} in gists · `,
      h("span", { class: "swatch looked" }), ` looked up: ${[...looked].sort((a, b) => a - b).join(", ") || "none"}`),
    strip, gistRows);
}

/** MemWalker: the tree laid out leaves-first, the walk's nodes coloured by what happened there and its
 * edges numbered in order; beside it the walk step by step. */
function walkTree(nodes, result) {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const trajectory = result.details?.trajectory || [];
  const root = byId.get("root");
  if (!root) return null;
  const leaves = nodes.filter((n) => !n.children?.length).sort((a, b) => a.index - b.index);
  const depth = (id) => (id === "root" ? 0 : id.split(".").length);
  const maxDepth = Math.max(...nodes.map((n) => depth(n.id)));
  const gapX = Math.max(34, Math.min(70, 900 / Math.max(1, leaves.length)));
  const gapY = 74;
  const pos = new Map();
  let next = 0;
  const place = (n) => {
    if (!n.children?.length) pos.set(n.id, { x: 30 + next++ * gapX, y: 28 + depth(n.id) * gapY });
    else {
      n.children.forEach((c) => byId.has(c) && place(byId.get(c)));
      const xs = n.children.filter((c) => pos.has(c)).map((c) => pos.get(c).x);
      pos.set(n.id, { x: (Math.min(...xs) + Math.max(...xs)) / 2, y: 28 + depth(n.id) * gapY });
    }
  };
  place(root);
  const fate = new Map();
  const order = [];
  for (const st of trajectory) {
    order.push(st.node);
    const f = st.kind === "leaf" ? (st.action === -2 ? "answered" : "rejected") : st.kind === "triage" ? "visited" : st.kind;
    if (fate.get(st.node) !== "answered") fate.set(st.node, f);
  }
  const width = 60 + Math.max(0, next - 1) * gapX;
  const height = 56 + maxDepth * gapY;
  const edges = [];
  const walked = new Set();
  for (let i = 1; i < order.length; i++) walked.add(`${order[i - 1]}>${order[i]}`).add(`${order[i]}>${order[i - 1]}`);
  for (const n of nodes) for (const c of n.children || []) {
    if (!pos.has(c) || !pos.has(n.id)) continue;
    const a = pos.get(n.id);
    const b = pos.get(c);
    const on = walked.has(`${n.id}>${c}`) || (fate.has(c) && fate.has(n.id));
    edges.push(s("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y, class: on ? "edge walked" : "edge" }));
  }
  const circles = nodes.filter((n) => pos.has(n.id)).map((n) => {
    const p = pos.get(n.id);
    const f = fate.get(n.id) || "";
    const label = n.id === "root" ? "root" : n.id;
    return s("g", { class: `node ${f}`, transform: `translate(${p.x},${p.y})`, "data-node": n.id },
      s("title", {}, `${n.id}${n.children?.length ? "" : " (leaf)"}: ${clip(n.summary, 400)}`),
      s("circle", { r: n.children?.length ? 11 : 9 }),
      s("text", { y: n.children?.length ? -16 : 24, "text-anchor": "middle" }, clip(label, 8)));
  });
  const numbers = new Map();
  order.forEach((id, i) => numbers.set(id, [...(numbers.get(id) || []), i + 1]));
  const steps = [...numbers].map(([id, nos]) => {
    const p = pos.get(id);
    return p ? s("text", { x: p.x + 13, y: p.y - 9, class: "walk-no", "data-steps": nos.join(" ") }, nos.join(", ")) : null;
  });
  const svg = s("svg", { class: "tree", width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
                         "aria-label": `MemWalker tree with ${nodes.length} nodes; the walk: ${result.details?.walk || ""}` },
    edges, circles, steps);
  const kinds = { visited: "chose a child", rejected: "read, went back (−1)", answered: "answered (−2)", exhausted: "exhausted" };
  return section("Tree walk",
    h("p", { class: "walk mono small" }, result.details?.walk || ""),
    h("div", { class: "tree-wrap", id: "tree" }, svg),
    h("p", { class: "legend small" }, Object.entries(kinds).map(([k, v]) => h("span", {}, h("span", { class: `swatch ${k}` }), v))),
    h("ol", { class: "walk-steps" }, trajectory.map((st) => h("li", {},
      h("span", { class: "mono" }, st.node), " ", h("span", { class: `pill ${st.kind}` }, st.kind),
      st.action !== null && st.action !== undefined ? h("span", { class: "muted small" }, ` action ${st.action}`) : null,
      st.answer ? h("span", {}, ` → ${st.answer}`) : null,
      st.reasoning ? h("p", { class: "muted small reason" }, clip(st.reasoning, 300)) : null))));
}

// --- agents -------------------------------------------------------------------------------------
async function agentsPage() {
  const slot = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  const name = h("input", { type: "text", id: "agent-name", required: true, pattern: "[A-Za-z0-9][A-Za-z0-9_.\\-]{0,63}", placeholder: "sam" });
  const persona = h("textarea", { id: "agent-persona", rows: 2, placeholder: "default persona" });
  const human = h("textarea", { id: "agent-human", rows: 2, placeholder: "what the agent knows about you" });
  const note = h("p", { class: "form-note", role: "status" });
  const load = async () => {
    const agents = await apiAll("/v1/agents?limit=1000");
    clear(slot, agents.length ? h("table", { class: "table", id: "agents" },
      h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Memory"), h("th", {}, "Created"))),
      h("tbody", {}, agents.map((a) => h("tr", {},
        h("td", {}, h("a", { href: `#/agents/${enc(a.id)}` }, a.name)),
        h("td", { class: "muted small" }, countsText(a.counts)),
        h("td", {}, when(a.created))))))
      : h("p", { class: "empty" }, "No agents yet."));
  };
  clear(app,
    h("div", { class: "page-head" }, h("h1", {}, "Agents"),
      h("p", { class: "muted" }, "MemGPT agents with core, recall and archival memory.")),
    h("div", { class: "columns" }, slot,
      h("form", { class: "card", id: "agent-form", onsubmit: async (e) => {
        e.preventDefault();
        try {
          const body = { name: name.value.trim() };
          if (persona.value.trim()) body.persona = persona.value.trim();
          if (human.value.trim()) body.human = human.value.trim();
          const agent = await api("/v1/agents", { method: "POST", json: body });
          location.hash = `#/agents/${enc(agent.id)}`;
        } catch (err) {
          note.className = "form-note error";
          note.textContent = err.message;
        }
      } },
      h("h2", {}, "New agent"),
      h("label", { for: "agent-name" }, "Name"), name,
      h("label", { for: "agent-persona" }, "Persona ", h("span", { class: "muted" }, "(optional)")), persona,
      h("label", { for: "agent-human" }, "About you ", h("span", { class: "muted" }, "(optional)")), human,
      h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Create"), note))));
  await load();
}

function countsText(counts) {
  if (!counts) return "";
  return Object.entries(counts).map(([k, v]) => `${num(v)} ${k.replaceAll("_", " ")}`).join(" · ");
}

async function agentPage(id, signal) {
  const agent = await api(`/v1/agents/${enc(id)}`);
  const blocks = h("div", { id: "blocks" });
  const history = h("ol", { class: "chat", id: "messages" });
  const turn = h("div", { id: "turn" });
  const archival = h("div", {});
  const more = h("button", { class: "link", hidden: true }, "Earlier messages");
  const PAGE = 40;

  const drawBlocks = (list) => clear(blocks, list.map((b) => blockCard(id, b, drawBlocks)));
  const loadBlocks = async () => drawBlocks(await api(`/v1/agents/${enc(id)}/memory/blocks`, { signal }));
  // the history is oldest first: show its last page, and earlier pages on demand
  let first = 0;
  const page = (offset) => api(`/v1/agents/${enc(id)}/messages?offset=${offset}&limit=${PAGE}`, { signal });
  const loadMessages = async (older = false) => {
    let got;
    if (older) got = await page((first = Math.max(0, first - PAGE)));
    else {
      got = await page(0);
      if (got.total > PAGE) got = await page((first = got.total - PAGE));
      else first = 0;
    }
    const rows = got.messages.map(messageRow).filter(Boolean);
    if (older) history.prepend(...rows);
    else clear(history, rows.length ? rows : h("li", { class: "empty" }, "No messages yet. Say hello."));
    more.hidden = first === 0;
    if (!older) history.scrollTop = history.scrollHeight;
  };
  more.addEventListener("click", () => loadMessages(true));

  const input = h("textarea", { id: "message", rows: 2, required: true, placeholder: `Message ${agent.name}…` });
  const note = h("p", { class: "form-note", role: "status" });
  const send = h("button", { type: "submit", class: "primary", id: "send" }, "Send");
  const form = h("form", { class: "composer", id: "send-form", onsubmit: async (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    note.className = "form-note";
    note.textContent = "";
    send.disabled = true;
    try {
      let run;
      try {
        run = await api(`/v1/agents/${enc(id)}/messages?wait=false`, { method: "POST", json: { message: text } });
      } catch (err) {
        if (err.status === 409 && err.body?.run_id) {
          note.className = "form-note error";
          clear(note, "A turn is running: ", h("a", { href: `#/runs/${enc(err.body.run_id)}` }, "watch it"), ". Send again when it ends.");
          return;
        }
        throw err;
      }
      input.value = "";
      history.querySelector(".empty")?.remove();
      history.append(h("li", { class: "msg user" }, h("p", { class: "bubble user pre" }, text)));
      await followTurn(run.id || run.run_id, turn, signal);
      await Promise.all([loadMessages(), loadBlocks()]);
    } catch (err) {
      if (!signal.aborted) {
        note.className = "form-note error";
        note.textContent = err.message;
      }
    } finally {
      send.disabled = false;
    }
  } }, input, h("div", { class: "actions" }, send, note));
  input.addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) form.requestSubmit(); });

  const query = h("input", { type: "search", id: "archival-query", placeholder: "search archival memory" });
  const found = h("ol", { class: "plain passages" });
  const searchForm = h("form", { class: "inline", onsubmit: async (e) => {
    e.preventDefault();
    const res = await api(`/v1/agents/${enc(id)}/archival?query=${enc(query.value)}&limit=10`, { signal });
    const list = Array.isArray(res) ? res : res.passages || res.items || res.results || [];
    clear(found, list.length ? list.map((p) => h("li", {}, typeof p === "string" ? p : p.text ?? p.content ?? compact(p)))
      : h("li", { class: "muted" }, "Nothing found."));
  } }, query, h("button", { type: "submit" }, "Search"));
  clear(archival, searchForm, found);

  clear(app,
    h("div", { class: "page-head" },
      h("p", { class: "crumbs" }, h("a", { href: "#/agents" }, "Agents")),
      h("h1", {}, agent.name),
      h("p", { class: "facts" }, countsText(agent.counts), " · created ", when(agent.created), " · ",
        h("a", { href: `#/runs?kind=turn&target=${enc(id)}` }, "its turns"))),
    h("div", { class: "agent-body" },
      h("div", { class: "conversation card" }, h("h2", {}, "Conversation"), more, history, turn, form),
      h("aside", {}, section("Core memory", blocks), section("Archival memory", archival))));
  drawBlocks(agent.blocks || []);
  await Promise.all([loadMessages(), agent.blocks ? null : loadBlocks()]);
}

/** One entry of the agent's history (recall storage: {seq, kind, payload, time, text}) as a chat row; heartbeats
 * and the results of successful calls are left out of the conversation (a run's page shows them). */
function messageRow(m) {
  const p = m.payload || {};
  const time = m.time;
  if (m.kind === "user_message") return h("li", { class: "msg user" }, h("p", { class: "bubble user pre" }, p.message ?? m.text), stamp(time));
  if (m.kind === "step") {
    const args = p.arguments || {};
    if (p.function === "send_message") {
      return h("li", { class: "msg agent" }, p.thoughts ? h("p", { class: "thought small" }, p.thoughts) : null,
               h("p", { class: "bubble agent pre" }, args.message ?? ""), stamp(time));
    }
    return h("li", { class: `msg event${MEMORY_EDITS.has(p.function) ? " edit" : ""}` },
      h("span", { class: "mono small" }, `${p.function || "no call"}()`), " ",
      h("span", { class: "muted small" }, clip(Object.entries(args).filter(([k]) => k !== "request_heartbeat")
        .map(([k, v]) => `${k}: ${compact(v)}`).join(" · ") || p.thoughts || "", 160)));
  }
  if (m.kind === "function_result") {
    if (p.status === "OK" || !p.status) return null;
    return h("li", { class: "msg event" }, h("span", { class: "pill bad" }, `${p.function || "call"} failed`), " ",
             h("span", { class: "muted small" }, clip(p.message, 200)));
  }
  if (m.kind === "heartbeat") return null;
  if (m.kind === "summary") return h("li", { class: "msg event" }, h("span", { class: "pill" }, "evicted, summarised"), " ", h("span", { class: "muted small" }, clip(p.summary || m.text, 300)));
  const text = p.message ?? m.text ?? "";
  return h("li", { class: "msg event" }, h("span", { class: "pill" }, (m.kind || "event").replaceAll("_", " ")), " ",
           h("span", { class: "muted small" }, clip(text, 300)));
}

/** What recall-before-reply placed in the turn's context ahead of its first step: each message or archival
 * passage, in the order the agent read it (recall_order). */
function recalledCard(recalled) {
  if (!recalled?.length) return null;
  return h("div", { class: "card", id: "recalled" }, h("h2", {}, "Recalled before the reply"),
    h("ol", { class: "sources-list" }, recalled.map((c) => h("li", {},
      h("span", { class: "muted small" }, c.unit === "passage" ? `archival passage ${c.index}` : `message ${c.index}`),
      " ", h("span", { class: "pre" }, clip(c.quote, 400))))));
}

function stamp(time) {
  if (!time) return null;
  return h("span", { class: "stamp" }, typeof time === "number" ? new Date(time * 1000).toLocaleString() : time);
}

function blockCard(agentId, b, redraw) {
  const used = (b.value || "").length;
  const value = h("p", { class: "block-value pre" }, b.value || "");
  const card = h("div", { class: "block", "data-label": b.label },
    h("div", { class: "block-head" }, h("strong", {}, b.label),
      h("span", { class: "muted small" }, `${num(used)} / ${num(b.limit)} chars`),
      h("button", { class: "link small", onclick: () => edit() }, "Edit"),
      h("button", { class: "link small", onclick: () => showHistory() }, "History")),
    h("span", { class: "bar" }, h("span", { style: `width:${Math.min(100, (100 * used) / Math.max(1, b.limit))}%` })),
    value);
  const past = h("ol", { class: "versions", hidden: true });
  card.append(past);
  // every write to the block is a version: its cause, its time, its diff from the one before; revert makes one more
  const showHistory = async () => {
    if (!past.hidden) { past.hidden = true; return; }
    const got = await api(`/v1/agents/${enc(agentId)}/memory/history?label=${enc(b.label)}&limit=50`);
    clear(past, got.versions.map((v, i) => h("li", { class: "version", "data-version": v.version },
      h("div", { class: "small" }, h("strong", {}, `v${v.version}`), " ", h("span", { class: "muted" }, v.cause), " ",
        stamp(v.time), i === 0 ? h("span", { class: "pill" }, "now") : h("button", { class: "link small", onclick:
          async () => {
            try {
              await api(`/v1/agents/${enc(agentId)}/memory/blocks/${enc(b.label)}/revert`,
                        { method: "POST", json: { version: v.version } });
              redraw(await api(`/v1/agents/${enc(agentId)}/memory/blocks`));
            } catch (err) {
              past.append(h("li", { class: "form-note error" }, err.message));
            }
          } }, "Revert to this")),
      v.diff === undefined ? null : h("pre", { class: "diff small" }, ...(v.diff.split("\n").slice(2).map((line) =>
        h("span", { class: line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "" }, `${line}\n`)))))));
    past.hidden = false;
  };
  const edit = () => {
    const area = h("textarea", { rows: 5, maxlength: b.limit }, "");
    area.value = b.value || "";
    const error = h("p", { class: "form-note error" });
    value.replaceWith(h("form", { class: "block-edit", onsubmit: async (e) => {
      e.preventDefault();
      try {
        await api(`/v1/agents/${enc(agentId)}/memory/blocks/${enc(b.label)}`, { method: "PUT", json: { value: area.value } });
        redraw(await api(`/v1/agents/${enc(agentId)}/memory/blocks`));
      } catch (err) {
        error.textContent = err.message;
      }
    } }, area, h("div", { class: "actions" }, h("button", { type: "submit", class: "primary small" }, "Save"), error)));
  };
  return card;
}

/** An agent turn's steps as they happen, under the conversation. */
async function followTurn(runId, slot, signal) {
  const rows = h("ol", { class: "steps compact" });
  const live = h("span", { class: "live" });
  clear(slot, h("div", { class: "turn" }, h("p", { class: "small" }, h("strong", {}, "This turn"), " ", live, " · ",
    h("a", { href: `#/runs/${enc(runId)}` }, "open the run")), rows));
  const list = new StepList(rows, "turn");
  const seen = new Set();
  await followRun(runId, {
    signal,
    onStatus: (st) => { live.className = `live live-${st}`; live.textContent = st === "ended" ? "" : st; },
    onStep: (step) => { if (!seen.has(step.seq)) { seen.add(step.seq); list.add(step); } },
    onEnd: (run) => { if (run.error) rows.append(h("li", { class: "step step-error" }, run.error)); },
  });
}

start();
