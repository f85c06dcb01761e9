// The planner page: the spec (form and YAML), live re-planning, what-ifs, charts, drill-down,
// downloads and share links, over the JSON API in rightsize/ui/app.py.
import { el, clear } from "./dom.js";
import { getJson, postSpec, download, saveText } from "./api.js";
import { SpecForm } from "./form.js";
import { toYaml } from "./yaml.js";
import { shareFragment, specFromFragment } from "./share.js";
import { renderHeadline, renderDrill, renderCharts, renderSections, renderFleet, FLEET_CHARTS } from "./render.js";
import { loadSaved, storeSaved, renderList, renderComparison } from "./whatifs.js";

const $ = (id) => document.getElementById(id);
const DEBOUNCE_MS = 350;
const state = { yaml: "", data: null, kind: null, schemas: new Map(), view: null, seq: 0, timer: null, inflight: null, saved: loadSaved() };
const form = new SpecForm($("spec-form"), onFormEdit);

function setStatus(text) { $("status").textContent = text; }

function showError(box, message) {
  box.hidden = !message;
  box.textContent = message || "";
}

async function schemaFor(kind) {
  if (!state.schemas.has(kind)) {
    const r = await getJson(`/api/schema/${encodeURIComponent(kind)}`);
    if (r.status !== 200) return null;
    state.schemas.set(kind, r.body);
  }
  return state.schemas.get(kind);
}

// The form drawn again from data (the YAML was edited, a what-if or link loaded); not after the
// form's own edits, so focus and typing are never disturbed.
async function redrawForm(data) {
  if (!data || typeof data !== "object" || Array.isArray(data)) return;
  const kind = typeof data.kind === "string" ? data.kind : "training";
  const schema = await schemaFor(kind);
  if (!schema) return;
  state.kind = kind;
  form.render(schema, data);
}

function onFormEdit(data) {
  state.data = data;
  state.yaml = toYaml(data);
  $("yaml").value = state.yaml;
  schedule(false);
}

function schedule(redraw) {
  clearTimeout(state.timer);
  setStatus("Planning…");
  state.timer = setTimeout(() => replan(redraw), DEBOUNCE_MS);
}

async function replan(redraw) {
  const seq = ++state.seq;
  if (state.inflight) state.inflight.abort();
  state.inflight = new AbortController();
  const started = performance.now();
  let r, body;
  try {
    r = await postSpec("/api/plan", state.yaml, state.inflight.signal);
    body = await r.json();
  } catch (e) {
    if (e.name === "AbortError") return;
    if (seq === state.seq) { setStatus("The planner did not answer."); showError($("plan-error"), `The planner did not answer: ${e.message}`); }
    return;
  }
  if (seq !== state.seq) return;  // a newer edit is on its way
  if (redraw && body.spec_data !== undefined) await redrawForm(body.spec_data);
  if (body.spec_data && typeof body.spec_data === "object") state.data = body.spec_data;
  if (body.error) return showFailure(body.error);
  showPlan(body, performance.now() - started);
}

// The fields an infeasible plan's advice names (`Extend targets.deadline to at least 8d`).
function named(message) {
  return [...new Set([...message.matchAll(/\b([a-z_]+(?:\.[a-z_]+)+)\b/g)].map((m) => m[1]))]
    .filter((p) => form.fields.has(p) || form.groups.has(p));
}

function showFailure(error) {
  const advice = error.kind === "infeasible" ? named(error.message).map((path) => ({ path, message: "No configuration meets the spec; the message under Plan suggests changing this." })) : [];
  const unplaced = form.showProblems([...(error.fields || []), ...advice]);
  showError($("spec-error"), error.kind === "bad_input" ? error.message : "");
  showError($("plan-error"), error.kind === "bad_input" ? (unplaced.length || !error.fields.length ? "The spec has problems; see above." : "") : error.message);
  setStatus(error.kind === "infeasible" ? "No configuration meets this spec (see below)." : error.kind === "bad_input" ? "The spec has problems: not planned." : "Internal error.");
  $("spec-summary").textContent = error.kind === "infeasible" ? "Plan: infeasible (see the plan's message)" : "Plan: not planned: the spec has problems";
  document.body.dataset.planState = "error";
  document.body.dataset.planSeq = String(state.seq);
}

function showPlan(view, ms) {
  form.showProblems([]);
  showError($("spec-error"), "");
  showError($("plan-error"), "");
  const previous = state.view ? state.view.headline : null;
  state.view = view;
  clear($("notes")).append(...(view.notes || []).map((n) => el("li", { text: `note: ${n}` })));
  $("decision").textContent = view.document.decision || "";
  renderHeadline($("headline"), view.headline, previous, (f) => {
    $("drill").hidden = false;
    renderDrill($("drill-body"), f, state.view);
    $("drill-h").focus();
  });
  const fleet = view.kind === "fleet";
  $("fleet").hidden = !fleet;
  if (fleet) renderFleet($("fleet-body"), view);
  const picks = view.kind === "training" ? { pareto: tryParetoPoint } : {};
  renderCharts($("charts"), view.document, fleet ? FLEET_CHARTS : new Set(), picks);
  renderSections($("sections"), view.document);
  if (!$("drill").hidden) $("drill").hidden = true;
  setStatus(`Planned ${view.plan.name || "the spec"} in ${(ms / 1000).toFixed(1)} s.`);
  $("spec-summary").textContent = `Plan: ${summary(view)}`;
  document.body.dataset.planState = "ok";
  document.body.dataset.planSeq = String(state.seq);
}

// A training Pareto point ("2,048 x b200: ...") tried as a what-if: that accelerator, that count.
function tryParetoPoint(text) {
  const m = /^([\d,]+) x ([A-Za-z0-9._-]+):/.exec(text);
  if (!m || !state.data) return;
  const data = structuredClone(state.data);
  data.targets = { ...(data.targets || {}), accelerators: [m[2]], gpus: Number(m[1].replace(/,/g, "")) };
  setStatus(`Trying ${m[1]} × ${m[2]} from the Pareto front…`);
  loadText(toYaml(data));
}

// --- what-ifs
function summary(view) {
  const h = Object.fromEntries(view.headline.map((f) => [f.id, f.text]));
  return `${h.count} × ${h.accelerator}, ${h.time}, ${h.cost}`;
}

function refreshList() {
  renderList($("whatif-list"), state.saved, {
    tick: (i, on) => { state.saved[i].ticked = on; storeSaved(state.saved); },
    load: (i) => loadText(state.saved[i].yaml),
    remove: (i) => { state.saved.splice(i, 1); storeSaved(state.saved); refreshList(); },
  });
}

$("whatif-save").addEventListener("click", () => {
  if (!state.view || document.body.dataset.planState !== "ok") { setStatus("Only a planned spec can be saved: fix the spec first."); return; }
  const name = $("whatif-name").value.trim() || `what-if ${state.saved.length + 1}`;
  const entry = { name, yaml: state.yaml, data: state.data, headline: state.view.headline, summary: summary(state.view), ticked: true };
  const i = state.saved.findIndex((w) => w.name === name);
  if (i >= 0) state.saved[i] = entry; else state.saved.push(entry);
  storeSaved(state.saved);
  $("whatif-name").value = "";
  refreshList();
  setStatus(`Saved what-if “${name}”.`);
});

$("compare").addEventListener("click", () => renderComparison($("comparison"), state.saved.filter((w) => w.ticked)));

// --- downloads, share link, files
for (const b of document.querySelectorAll("button[data-download]")) {
  b.addEventListener("click", async () => {
    const what = b.dataset.download, stem = (state.view && state.view.plan.name) || "spec";
    if (what === "spec") { saveText(state.yaml, `${stem}.yaml`, "application/yaml"); return; }
    if (document.body.dataset.planState !== "ok") { setStatus("Only a planned spec has a plan and job files: fix the spec first."); return; }
    setStatus("Preparing the download…");
    const url = what === "jobs" ? "/api/download/jobs" : `/api/download/plan/${b.dataset.format}`;
    const error = await download(url, state.yaml, `${stem}.${what === "jobs" ? "zip" : b.dataset.format}`);
    setStatus(error ? "The download failed (see below)." : "Downloaded.");
    showError($("plan-error"), error ? error.message : "");
  });
}

$("share").addEventListener("click", async () => {
  const link = `${location.origin}${location.pathname}#${await shareFragment(state.yaml)}`;
  $("share-link").value = link;
  $("share-link").select();
  try { await navigator.clipboard.writeText(link); setStatus("Share link made and copied."); } catch { setStatus("Share link made: copy it from the box."); }
});

$("open-file").addEventListener("change", async (e) => {
  const file = e.target.files[0];
  if (!file) return;
  if (file.size > 1 << 20) { showError($("spec-error"), `The file ${file.name} is larger than a spec may be (1 MiB).`); return; }
  $("source").textContent = `Spec: ${file.name} (opened in the browser; relative paths resolve where the planner was started)`;
  loadText(await file.text());
});

$("yaml").addEventListener("input", () => { state.yaml = $("yaml").value; schedule(true); });
$("drill-close").addEventListener("click", () => { $("drill").hidden = true; });

function loadText(text) {
  state.yaml = text;
  $("yaml").value = text;
  schedule(true);
}

async function start() {
  const r = await getJson("/api/start");
  let text = r.body.yaml;
  $("source").textContent = `Spec: ${r.body.source}`;
  try {
    const shared = await specFromFragment(location.hash);
    if (shared !== null) { text = shared; $("source").textContent = "Spec: from a share link"; }
  } catch (e) {
    showError($("spec-error"), `The share link cannot be read: ${e.message}`);
  }
  refreshList();
  loadText(text);
}

start();
