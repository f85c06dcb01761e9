// Building the page with DOM calls only: text goes in as text, never as markup.
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

export function table(columns, rows, opts = {}) {
  const align = opts.align || [];
  const t = el("table", {}, opts.title ? el("caption", { text: opts.title }) : null,
    el("thead", {}, el("tr", {}, columns.map((c, i) => el("th", { scope: "col", class: align[i] === "r" ? "r" : null, text: c })))),
    el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c, i) => (c instanceof Node ? el("td", { class: align[i] === "r" ? "r" : null }, c)
      : el("td", { class: align[i] === "r" ? "r" : null, text: c ?? "" })))))));
  return el("div", { class: "table-wrap" }, t);
}

// An SVG chart the server rendered (report/svg.py), parsed as SVG and imported, never as HTML.
export function svgNode(text) {
  const doc = new DOMParser().parseFromString(text, "image/svg+xml");
  const root = doc.documentElement;
  if (root.nodeName !== "svg") return el("p", { text: "(chart could not be drawn)" });
  for (const s of root.querySelectorAll("script, foreignObject")) s.remove();
  return document.importNode(root, true);
}
