// A form over the spec, built from its JSON Schema (`rightsize schema`): one labelled control per
// field, an object as a collapsible group, a field whose value is a structure as JSON text. The form
// edits a plain copy of the spec's data; `onChange` gets the whole data after each edit.
import { el, clear } from "./dom.js";

const NUMBER = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;

function deref(root, node) {
  let n = node;
  for (let i = 0; n && n.$ref && i < 20; i++) n = (root.$defs || {})[n.$ref.split("/").pop()];
  return n || {};
}

function options(root, node) {
  const n = deref(root, node);
  if (!n.anyOf && !n.oneOf) return [n];
  return (n.anyOf || n.oneOf).flatMap((o) => options(root, o)).filter((o) => o.type !== "null");
}

const isScalar = (o) => o.enum || ["string", "number", "integer", "boolean"].includes(o.type);

// What control a schema node gets: object, enum, bool, list, scalar or json (any structure).
export function classify(root, node) {
  const opts = options(root, node);
  const desc = deref(root, node).description || opts.map((o) => o.description).find(Boolean) || "";
  if (opts.length === 1) {
    const o = opts[0];
    if (o.properties) return { type: "object", node: o, desc };
    if (o.const !== undefined) return { type: "const", value: o.const, desc };
    if (o.enum) return { type: "enum", values: o.enum, desc };
    if (o.type === "boolean") return { type: "bool", desc };
    if (o.type === "array") {
      const items = options(root, o.items || {});
      if (items.length && items.every(isScalar) && !items.some((i) => i.type === "boolean"))
        return { type: "list", numeric: items.every((i) => i.type === "number" || i.type === "integer"), desc };
      return { type: "json", desc };
    }
    if (isScalar(o)) return { type: "scalar", numeric: o.type !== "string", desc };
    return { type: "json", desc };
  }
  const arrays = opts.filter((o) => o.type === "array"), words = opts.filter((o) => o.const !== undefined || o.enum);
  if (arrays.length === 1 && arrays.length + words.length === opts.length) {  // a list, or a word such as 'all'
    const items = options(root, arrays[0].items || {});
    if (items.length && items.every(isScalar) && !items.some((i) => i.type === "boolean"))
      return { type: "list", numeric: items.every((i) => i.type === "number" || i.type === "integer"),
        words: words.flatMap((o) => (o.enum ? o.enum : [o.const])), desc };
  }
  if (opts.length && opts.every((o) => o.enum)) return { type: "enum", values: [...new Set(opts.flatMap((o) => o.enum))], desc };
  if (opts.length && opts.every(isScalar) && !opts.some((o) => o.type === "boolean"))
    return { type: "scalar", numeric: opts.some((o) => o.type === "number" || o.type === "integer"), desc };
  return { type: "json", desc };
}

function getPath(data, path) {
  let d = data;
  for (const p of path) { if (!d || typeof d !== "object") return undefined; d = d[p]; }
  return d;
}

function setPath(data, path, value) {
  const stack = [data];
  let d = data;
  for (const p of path.slice(0, -1)) {
    if (!d[p] || typeof d[p] !== "object" || Array.isArray(d[p])) d[p] = {};
    d = d[p];
    stack.push(d);
  }
  const last = path[path.length - 1];
  if (value === undefined) delete d[last];
  else d[last] = value;
  for (let i = stack.length - 1; i > 0; i--) {  // an emptied group goes, as if never written
    if (Object.keys(stack[i]).length === 0 && value === undefined) delete stack[i - 1][path[i - 1]];
    else break;
  }
}

function shown(kind, v) {
  if (v === undefined || v === null) return "";
  if (kind.type === "list" && Array.isArray(v)) return v.join(", ");
  if (typeof v === "object") return JSON.stringify(v, null, 1);
  return String(v);
}

function scalarOf(text, numeric) {
  const t = text.trim();
  if (t === "") return undefined;
  return numeric && NUMBER.test(t) ? Number(t) : t;
}

// The value a control holds, or {error} when its text cannot be read.
function parsed(kind, control) {
  const t = control.value;
  if (kind.type === "enum") return { value: t === "" ? undefined : kind.values.find((v) => String(v) === t) };
  if (kind.type === "bool") return { value: t === "" ? undefined : t === "true" };
  if (kind.type === "list") {
    const items = t.split(",").map((s) => s.trim()).filter(Boolean);
    if (items.length === 1 && (kind.words || []).includes(items[0])) return { value: items[0] };
    return { value: items.length ? items.map((s) => scalarOf(s, kind.numeric)) : undefined };
  }
  if (kind.type === "json" && /^\s*[[{"]/.test(t)) {
    try { return { value: JSON.parse(t) }; } catch (e) { return { error: `not valid JSON: ${e.message}` }; }
  }
  return { value: scalarOf(t, kind.numeric !== false) };
}

export class SpecForm {
  constructor(container, onChange) {
    this.container = container;
    this.onChange = onChange;
    this.fields = new Map();  // "a.b.c" -> {wrap, control, errorBox}
    this.groups = new Map();  // "a.b" -> {details, errorBox}
  }

  render(schema, data) {
    this.schema = schema;
    this.data = structuredClone(data || {});
    this.fields.clear();
    this.groups.clear();
    clear(this.container);
    this.container.append(...this.children(schema, [], 0));
  }

  children(node, path, depth) {
    const out = [];
    for (const [key, prop] of Object.entries(node.properties || {})) {
      const kind = classify(this.schema, prop);
      const p = [...path, key];
      out.push(kind.type === "object" ? this.group(kind, p, depth, prop) : this.field(kind, p, prop));
    }
    return out;
  }

  group(kind, path, depth, prop) {
    const key = path.join(".");
    const errorBox = el("div", { class: "field-error", role: "alert", hidden: true });
    const present = getPath(this.data, path) !== undefined;
    const details = el("details", { "data-path": key, open: present },
      el("summary", { text: path[path.length - 1] }),
      el("fieldset", {}, el("legend", { class: "vh", text: key }), kind.desc ? el("p", { class: "hint", text: kind.desc }) : null,
        errorBox, ...this.children(kind.node, path, depth + 1)));
    this.groups.set(key, { details, errorBox });
    return details;
  }

  field(kind, path, prop) {
    const key = path.join(".");
    const id = "f_" + key.replace(/[^A-Za-z0-9_]/g, "_");
    const value = getPath(this.data, path);
    const dflt = deref(this.schema, prop).default;
    const hint = dflt !== undefined && dflt !== null ? `default: ${typeof dflt === "object" ? JSON.stringify(dflt) : dflt}` : "not set";
    let control;
    if (kind.type === "enum" || kind.type === "bool") {
      const values = kind.type === "bool" ? [true, false] : kind.values;
      control = el("select", { id }, el("option", { value: "", text: `(${hint})` }),
        values.map((v) => el("option", { value: String(v), text: String(v), selected: value !== undefined && String(value) === String(v) })));
    } else if (kind.type === "json") {
      control = el("textarea", { id, rows: 1, spellcheck: "false", placeholder: hint });
      control.value = shown(kind, value);
      control.rows = Math.min(12, control.value.split("\n").length);
    } else {
      control = el("input", { id, type: "text", placeholder: hint, readonly: kind.type === "const", autocomplete: "off" });
      control.value = kind.type === "const" ? String(value ?? kind.value) : shown(kind, value);
    }
    const descId = id + "_d", errId = id + "_e";
    const errorBox = el("div", { id: errId, class: "field-error", role: "alert", hidden: true });
    control.setAttribute("aria-describedby", `${descId} ${errId}`);
    control.dataset.path = key;
    const wrap = el("div", { class: "field" }, el("label", { for: id, text: path[path.length - 1] }), control,
      el("span", { id: descId, class: "desc", text: kind.desc }), errorBox);
    if (kind.type !== "const") {
      const edit = () => {
        const r = parsed(kind, control);
        if (r.error) { this.mark(key, r.error); return; }
        this.mark(key, null);
        setPath(this.data, path, r.value);
        this.onChange(structuredClone(this.data), key);
      };
      control.addEventListener(control.tagName === "SELECT" ? "change" : "input", edit);
    }
    this.fields.set(key, { wrap, control, errorBox });
    return wrap;
  }

  mark(key, message) {
    const f = this.fields.get(key) || this.groups.get(key);
    if (!f) return;
    f.errorBox.hidden = !message;
    f.errorBox.textContent = message || "";
    if (f.wrap) f.wrap.classList.toggle("invalid", Boolean(message));
    if (f.control) f.control.setAttribute("aria-invalid", message ? "true" : "false");
  }

  // The deepest field or group a problem's path names (union tags and list indexes skipped).
  target(path) {
    let cur = "", found = null;
    for (const seg of path.split(".")) {
      const cand = cur ? `${cur}.${seg}` : seg;
      if (this.fields.has(cand) || this.groups.has(cand)) { cur = cand; found = cand; }
    }
    return found;
  }

  // Problems [{path, message}] shown at their fields; those with no field are returned.
  showProblems(problems) {
    for (const key of [...this.fields.keys(), ...this.groups.keys()]) this.mark(key, null);
    const unplaced = [], byKey = new Map();
    for (const p of problems) {
      const key = this.target(p.path);
      if (!key) { unplaced.push(p); continue; }
      const text = key === p.path ? p.message : `${p.path}: ${p.message}`;
      byKey.set(key, byKey.has(key) ? `${byKey.get(key)}\n${text}` : text);
    }
    for (const [key, text] of byKey) {
      this.mark(key, text);
      for (let d = (this.fields.get(key) || this.groups.get(key)).wrap || this.groups.get(key).details; d; d = d.parentElement) {
        if (d.tagName === "DETAILS") d.open = true;
      }
    }
    return unplaced;
  }
}
