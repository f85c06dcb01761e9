// The planner's JSON API (rightsize/ui/app.py).
export async function getJson(url) {
  const r = await fetch(url, { headers: { Accept: "application/json" } });
  return { status: r.status, body: await r.json() };
}

export async function postSpec(url, yamlText, signal) {
  const r = await fetch(url, {
    method: "POST", signal, headers: { "Content-Type": "application/json" }, body: JSON.stringify({ yaml: yamlText }),
  });
  return r;
}

function save(blob, name) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

function nameFrom(response, fallback) {
  const m = /filename="([^"]+)"/.exec(response.headers.get("Content-Disposition") || "");
  return m ? m[1] : fallback;
}

// A file the server renders from the spec; on an error, the CLI's message is returned instead.
export async function download(url, yamlText, fallback) {
  const r = await postSpec(url, yamlText);
  if (!r.ok) return (await r.json()).error;
  save(await r.blob(), nameFrom(r, fallback));
  return null;
}

export function saveText(text, name, type) {
  save(new Blob([text], { type }), name);
}
