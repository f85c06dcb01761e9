// A what-if in a link: the spec's YAML, deflated and base64url-coded, in the URL fragment (never
// sent to any server). Reading one back stops at the spec's size cap.
const MAX_SPEC_BYTES = 1 << 20;

function toBase64Url(bytes) {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64Url(text) {
  const s = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  return Uint8Array.from(s, (c) => c.charCodeAt(0));
}

export async function shareFragment(yamlText) {
  const stream = new Blob([yamlText]).stream().pipeThrough(new CompressionStream("deflate-raw"));
  const bytes = new Uint8Array(await new Response(stream).arrayBuffer());
  return "spec=" + toBase64Url(bytes);
}

export async function specFromFragment(hash) {
  const m = /(?:^#|&)spec=([A-Za-z0-9_-]+)/.exec(hash || "");
  if (!m) return null;
  const stream = new Blob([fromBase64Url(m[1])]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
  const reader = stream.getReader();
  const chunks = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > MAX_SPEC_BYTES) { await reader.cancel(); throw new Error("the shared spec is larger than a spec may be (1 MiB)"); }
    chunks.push(value);
  }
  return new TextDecoder().decode(await new Blob(chunks).arrayBuffer());
}
