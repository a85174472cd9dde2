"""The lab's own chat page, served by the browser itself (``page.route``) on a reserved path of
the target's origin: its fetches are same-origin, so the target's cookies and a reload behave as
with the app's own page, and the target needs no page at all.

The page speaks the spec's contract with fetch and reports raw answers (status, content type,
body); Python parses them (lab/investigate/spec.py), so a body outside the spec is evidence, not
a crash in the page.
"""

from __future__ import annotations

import json

from lab.investigate.spec import Spec

PAGE_PATH = "/__chaoslab__/chat"

_HTML = """<!doctype html><html><head><meta charset="utf-8"><title>chaoslab probe</title></head>
<body><h1>chaoslab probe of __NAME__</h1><ol id="history"></ol>
<script>
const CFG = __CFG__;
async function call(method, path, body) {
  const t0 = performance.now();
  try {
    const init = {method, credentials: "same-origin", headers: {}};
    if (body !== undefined) { init.headers["Content-Type"] = "application/json"; init.body = JSON.stringify(body); }
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), CFG.timeout_ms);
    init.signal = ctl.signal;
    const resp = await fetch(path, init);
    const text = await resp.text();
    clearTimeout(timer);
    return {status: resp.status, type: resp.headers.get("content-type") || "", body: text,
            ms: performance.now() - t0, error: null};
  } catch (e) {
    return {status: null, type: "", body: "", ms: performance.now() - t0, error: String(e)};
  }
}
window.labSend = (text, id) => {
  const body = {}; body[CFG.message_field] = text;
  if (CFG.id_field && id) body[CFG.id_field] = id;
  return call("POST", CFG.chat_path, body);
};
window.labHistory = () => call("GET", CFG.history_path);
// What a user sees after a (re)load: the history as the page fetched it on load.
window.labLoaded = labHistory().then(r => {
  const ol = document.getElementById("history");
  ol.textContent = "";
  const li = document.createElement("li"); li.textContent = r.body.slice(0, 2000); ol.appendChild(li);
  return r;
});
</script></body></html>"""


def html(spec: Spec) -> str:
    cfg = {"message_field": spec.chat.message_field, "id_field": spec.chat.id_field,
           "chat_path": spec.chat.path, "history_path": spec.history.path,
           "timeout_ms": int(spec.chat.timeout_s * 1000)}
    # </ cannot close the script: JSON of the spec's strings is inert inside it.
    return (_HTML.replace("__CFG__", json.dumps(cfg).replace("</", "<\\/"))
            .replace("__NAME__", spec.name.replace("<", "&lt;")))
