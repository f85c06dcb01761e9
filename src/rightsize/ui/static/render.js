// Drawing a planned what-if: headline figures (each opens how it was computed), the report's
// charts made interactive, its sections (tables, bullets, sources), and a fleet's view.
import { el, clear, table, svgNode } from "./dom.js";

export function sectionBody(s) {
  return [
    ...s.text.map((t) => el("p", { text: t })),
    s.bullets.length ? el("ul", {}, s.bullets.map((b) => el("li", { text: b }))) : null,
    ...s.tables.map((t) => table(t.columns, t.rows, { title: t.title, align: t.align })),
    s.checks.length ? el("ul", {}, s.checks.map((c) => el("li", { text: `${c.done ? "✓" : "○"} ${c.text}` }))) : null,
    s.sources.length ? el("details", { class: "sources", open: true }, el("summary", { text: `Sources (${s.sources.length})` }),
      el("ul", {}, s.sources.map((x) => el("li", { text: x })))) : null,
  ];
}

export function renderHeadline(box, headline, previous, onPick) {
  clear(box);
  const before = new Map((previous || []).map((f) => [f.id, f.text]));
  for (const f of headline) {
    const changed = before.size > 0 && before.get(f.id) !== f.text;
    box.append(el("div", { role: "listitem" }, el("button", {
      type: "button", class: "card" + (changed ? " changed" : ""), "data-figure": f.id, "aria-controls": "drill",
      "aria-label": `${f.label}: ${f.text}${changed ? " (changed)" : ""}; show how it was computed`, onclick: () => onPick(f),
    }, el("span", { class: "k", text: f.label }), el("span", { class: "v", text: f.text }))));
  }
}

function at(data, path) {
  let d = data;
  for (const p of path.split(".")) { if (!d || typeof d !== "object") return undefined; d = d[p]; }
  return d;
}

// How a headline figure was computed: where the plan holds it, the figures beside it, and the
// report section that derives it, with its sources.
export function renderDrill(box, figure, view) {
  clear(box);
  const parentPath = figure.path.includes(".") ? figure.path.split(".").slice(0, -1).join(".") : figure.path;
  const parent = at(view.plan, parentPath);
  const sections = (figure.sections || [figure.section]).map((id) => view.document.sections.find((s) => s.id === id)).filter(Boolean);
  box.append(
    el("p", {}, el("strong", { text: `${figure.label}: ${figure.text}` })),
    el("p", { class: "hint", text: `Read from the plan's JSON at ${figure.path}; the figures beside it (${parentPath}) and the report sections that derive it follow.` }),
  );
  if (figure.beside && figure.beside.length) box.append(table(["field", "value"], figure.beside, { title: `plan JSON: ${parentPath}`, align: ["l", "r"] }));
  if (parent && typeof parent === "object") {
    box.append(el("details", { class: "drill-sec" }, el("summary", { text: `${parentPath} as JSON` }), el("pre", { class: "json", text: JSON.stringify(parent, null, 2).slice(0, 20000) })));
  }
  sections.forEach((section, i) => box.append(i === 0
    ? el("section", { class: "drill-sec", "data-section": section.id }, el("h4", { text: section.title }), ...sectionBody(section))
    : el("details", { class: "drill-sec", "data-section": section.id }, el("summary", { text: `Also: ${section.title}` }), ...sectionBody(section))));
}

let tip = null;
function showTip(target, text) {
  tip = tip || document.getElementById("tip");
  const r = target.getBoundingClientRect();
  tip.textContent = text;
  tip.hidden = false;
  const w = tip.offsetWidth;
  tip.style.left = `${Math.max(4, Math.min(window.innerWidth - w - 4, r.left + r.width / 2 - w / 2))}px`;
  tip.style.top = `${Math.max(4, r.top - tip.offsetHeight - 6)}px`;
}
function hideTip() { if (tip) tip.hidden = true; }

// Marks that carry a <title> answer hover and keyboard focus with their figures.
// `onPick(text)`, when given, makes each point (circle) a button: click, Enter or Space picks it.
function interactive(svg, onPick) {
  for (const t of svg.querySelectorAll("title")) {
    const mark = t.parentElement;
    if (!mark || mark === svg) continue;
    const text = t.textContent;
    if (onPick && mark.tagName === "circle") {
      mark.style.cursor = "pointer";
      mark.addEventListener("click", () => onPick(text));
      mark.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); onPick(text); } });
    }
    mark.setAttribute("tabindex", "0");
    mark.setAttribute("role", "img");
    mark.setAttribute("aria-label", text);
    mark.addEventListener("mouseenter", () => showTip(mark, text));
    mark.addEventListener("focus", () => showTip(mark, text));
    mark.addEventListener("mouseleave", hideTip);
    mark.addEventListener("blur", hideTip);
  }
  return svg;
}

// Open the report section a chart comes from (its tables and sources) and move focus there.
function openSection(id) {
  const d = document.getElementById(`sec-${id}`);
  if (!d) return;
  d.open = true;
  d.querySelector("summary").focus();
  d.scrollIntoView({ block: "start" });
}

export function chartFigure(chart, sectionTitle, sectionId, onPick) {
  const fig = el("figure", { "data-chart-name": chart.name });
  const wider = el("button", { type: "button", "aria-pressed": "false", text: "Larger", "aria-label": `Larger: ${chart.title}` });
  wider.addEventListener("click", () => {
    const on = fig.classList.toggle("wide");
    wider.setAttribute("aria-pressed", String(on));
  });
  const data = el("button", { type: "button", text: "Data", "aria-label": `Data and sources: ${sectionTitle}`, onclick: () => openSection(sectionId) });
  fig.append(interactive(svgNode(chart.svg), onPick), el("figcaption", {}, el("span", { text: chart.caption || (sectionTitle && !chart.title.startsWith(sectionTitle) ? `From: ${sectionTitle}` : "") }),
    el("span", { class: "buttons" }, data, wider)));
  return fig;
}

// `picks` maps a chart's name to what picking one of its points does.
export function renderCharts(box, doc, skip = new Set(), picks = {}) {
  clear(box);
  for (const s of doc.sections) for (const c of s.charts) if (!skip.has(c.name)) box.append(chartFigure(c, s.title, s.id, picks[c.name]));
  if (!box.firstChild) box.append(el("p", { class: "hint", text: "This plan has no charts." }));
}

export function renderSections(box, doc) {
  clear(box);
  for (const s of doc.sections) {
    box.append(el("details", { id: `sec-${s.id}`, "data-section": s.id }, el("summary", { text: s.title }), ...sectionBody(s),
      ...s.charts.map((c) => el("p", { class: "hint", text: `Chart: ${c.title} (in Charts above)` }))));
  }
}

export const FLEET_CHARTS = new Set(["fleet-timeline", "fleet-day", "fleet-by-workload"]);

export function renderFleet(box, view) {
  clear(box);
  const shares = (view.fleet || {}).shares || [];
  const rows = shares.map((r) => [r.workload, Math.round(r.gpu_hours).toLocaleString("en-US"),
    el("span", {}, el("span", { class: "bar", style: `width:${Math.round((r.share || 0) * 120)}px` }), `${((r.share || 0) * 100).toFixed(1)}%`)]);
  box.append(table(["workload", "GPU-hours over the horizon", "share"], rows, { title: "Each workload's share of the fleet's GPU-hours", align: ["l", "r", "l"] }));
  const charts = el("div", { class: "charts" });
  for (const s of view.document.sections) for (const c of s.charts) if (FLEET_CHARTS.has(c.name)) charts.append(chartFigure(c, s.title, s.id));
  box.append(charts);
}
