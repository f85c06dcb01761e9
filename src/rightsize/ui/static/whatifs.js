// Saved what-ifs (kept in this browser's local storage) and their side-by-side comparison: the
// headline figures of each, a figure that differs from the first what-if's highlighted with its
// change, and the spec fields that differ.
import { el, clear, table } from "./dom.js";

const KEY = "rightsize-ui-whatifs";

export function loadSaved() {
  try { return JSON.parse(localStorage.getItem(KEY) || "[]").filter((w) => w && w.name && typeof w.yaml === "string"); }
  catch { return []; }
}

export function storeSaved(list) {
  try { localStorage.setItem(KEY, JSON.stringify(list)); } catch { /* storage full or off: kept for this page only */ }
}

function flat(data, prefix = "", out = new Map()) {
  if (data && typeof data === "object" && !Array.isArray(data)) {
    for (const [k, v] of Object.entries(data)) flat(v, prefix ? `${prefix}.${k}` : k, out);
  } else out.set(prefix, JSON.stringify(data));
  return out;
}

function change(a, b) {
  if (typeof a !== "number" || typeof b !== "number" || a === 0) return "";
  const r = b / a - 1;
  return Math.abs(r) < 0.0005 ? "" : ` (${r > 0 ? "+" : ""}${(r * 100).toFixed(1)}%)`;
}

export function renderList(box, list, handlers) {
  clear(box);
  list.forEach((w, i) => {
    const id = `wi-${i}`;
    box.append(el("li", { "data-whatif": w.name },
      el("input", { type: "checkbox", id, checked: w.ticked, onchange: (e) => handlers.tick(i, e.target.checked) }),
      el("label", { for: id, class: "name", text: `${w.name} — ${w.summary}` }),
      el("button", { type: "button", text: "Load", "aria-label": `Load ${w.name}`, onclick: () => handlers.load(i) }),
      el("button", { type: "button", text: "Delete", "aria-label": `Delete ${w.name}`, onclick: () => handlers.remove(i) })));
  });
  if (!list.length) box.append(el("li", { class: "hint", text: "No saved what-ifs yet: name the current plan and save it." }));
}

export function renderComparison(box, picked) {
  clear(box);
  if (picked.length < 2) { box.append(el("p", { role: "status", text: "Tick two or more what-ifs to compare them." })); return; }
  const ids = picked[0].headline.map((f) => f.id);
  const rows = ids.map((id) => {
    const first = picked[0].headline.find((f) => f.id === id);
    return [first.label, ...picked.map((w, j) => {
      const f = w.headline.find((x) => x.id === id) || { text: "-", value: null };
      const differs = j > 0 && f.text !== first.text;
      const td = el("span", { class: differs ? "diff-text" : null }, f.text, differs ? el("span", { class: "delta", text: change(first.value, f.value) }) : null);
      td.dataset.differs = String(differs);
      return td;
    })];
  });
  const specs = picked.map((w) => flat(w.data || {}));
  const keys = [...new Set(specs.flatMap((m) => [...m.keys()]))].filter((k) => specs.some((m) => m.get(k) !== specs[0].get(k)));
  for (const k of keys) rows.push([`spec: ${k}`, ...specs.map((m, j) => {
    const td = el("span", { text: m.has(k) ? m.get(k) : "-" });
    td.dataset.differs = String(j > 0);
    return td;
  })]);
  const wrap = table(["", ...picked.map((w) => w.name)], rows, { title: "What-ifs side by side (differences from the first highlighted)" });
  for (const span of wrap.querySelectorAll("span[data-differs='true']")) span.parentElement.classList.add("diff");
  box.append(wrap);
}
