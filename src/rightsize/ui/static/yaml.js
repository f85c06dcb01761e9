// Plain data (what the spec's YAML parses to) written back as YAML that PyYAML reads to the same
// values: keys and strings plain where that is unambiguous, else double-quoted (JSON escapes are
// YAML escapes); floats always with a dot, so YAML 1.1 reads them as numbers.
const PLAIN = /^[A-Za-z_][A-Za-z0-9_ .\/+-]*$/;
const RESERVED = /^(y|n|yes|no|on|off|true|false|null|~)$/i;

function scalar(v) {
  if (v === null || v === undefined) return "null";
  if (typeof v === "boolean") return v ? "true" : "false";
  if (typeof v === "number") {
    if (!Number.isFinite(v)) return v > 0 ? ".inf" : v < 0 ? "-.inf" : ".nan";
    if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
    let [m, e] = v.toExponential().split("e");
    if (!m.includes(".")) m += ".0";
    return `${m}e${e}`;
  }
  const s = String(v);
  return PLAIN.test(s) && !RESERVED.test(s) && !s.endsWith(" ") && !s.includes(" #") && !s.includes(": ") ? s : JSON.stringify(s);
}

function isEmpty(v) {
  return (Array.isArray(v) && v.length === 0) || (v && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 0);
}

function lines(v, indent) {
  const pad = " ".repeat(indent);
  if (Array.isArray(v)) {
    if (v.every((x) => x === null || typeof x !== "object")) return [`[${v.map(scalar).join(", ")}]`];
    const out = [];
    for (const item of v) {
      if (item && typeof item === "object" && !isEmpty(item)) {
        const inner = lines(item, indent + 2);
        out.push(`\n${pad}- ${inner.join("").trimStart()}`);
      } else out.push(`\n${pad}- ${isEmpty(item) ? (Array.isArray(item) ? "[]" : "{}") : scalar(item)}`);
    }
    return out;
  }
  if (v && typeof v === "object") {
    const out = [];
    for (const [k, x] of Object.entries(v)) {
      if (x && typeof x === "object" && !isEmpty(x)) {
        const inner = lines(x, indent + 2);
        const flow = Array.isArray(x) && inner.length === 1 && !inner[0].startsWith("\n");
        out.push(`\n${pad}${scalar(k)}:${flow ? " " + inner[0] : inner.join("")}`);
      } else out.push(`\n${pad}${scalar(k)}: ${isEmpty(x) ? (Array.isArray(x) ? "[]" : "{}") : scalar(x)}`);
    }
    return out;
  }
  return [scalar(v)];
}

export function toYaml(data) {
  if (!data || typeof data !== "object") return scalar(data) + "\n";
  return lines(data, 0).join("").replace(/^\n/, "") + "\n";
}
