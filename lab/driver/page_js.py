"""The scripts the driver runs in the chat page (services/chat/static): waits that resolve on
the page's own DOM changes, and a user's submit -- one round trip each."""

from __future__ import annotations

SEND_TIMEOUT_S = 30.0  # a send with no outcome after this is left in flight (unknown)

# Waits on the page are event-driven: a MutationObserver resolves the moment the selector
# matches (one round trip to the page, no polling per animation frame). Each resolves with the
# rows the page shows at that moment (what the page shows once its history has loaded is read
# in the same round trip).
_UNTIL = """(sel, ms) => new Promise((resolve, reject) => {
  const rows = () => [Array.from(document.querySelectorAll("[data-testid=message]"),
                                 e => [e.dataset.id, e.dataset.role, e.dataset.state]),
                      (document.querySelector("[data-testid=history-status]") || {dataset: {}}).dataset.state || null];
  if (!sel || document.querySelector(sel)) return resolve(rows());
  const obs = new MutationObserver(() => {
    if (document.querySelector(sel)) { obs.disconnect(); clearTimeout(timer); resolve(rows()); }
  });
  obs.observe(document, { subtree: true, childList: true, attributes: true });
  const timer = setTimeout(() => { obs.disconnect(); reject(new Error("not within " + ms + " ms: " + sel)); }, ms);
})"""
UNTIL_JS = f"([sel, ms]) => ({_UNTIL})(sel, ms)"
# The user's message, once the previous turn has settled on the page (the user waits for the
# reply), typed into the composer and submitted through its form as Enter does -- in one round
# trip; returns the id the page gave the new message (its newest user bubble) and the ms spent
# waiting for the previous turn.
SEND_JS = f"""async ([text, after, ms]) => {{
  const t0 = performance.now();
  await ({_UNTIL})(after, ms);
  const waited = performance.now() - t0;
  const input = document.querySelector("[data-testid=composer-input]");
  input.focus();
  input.value = text;
  input.dispatchEvent(new Event("input", {{ bubbles: true }}));
  input.form.requestSubmit();
  const mine = document.querySelectorAll("[data-testid=message][data-role=user]");
  return [mine.length ? mine[mine.length - 1].dataset.id : null, waited];
}}"""


# A double click on Send, as a page without a guard sees it: the same message, under the same
# id, submitted twice within the same task (the page's own send(text, id) is what its retry
# button calls). Returns the id, as SEND_JS does.
DOUBLE_JS = f"""async ([text, after, ms]) => {{
  const t0 = performance.now();
  await ({_UNTIL})(after, ms);
  const waited = performance.now() - t0;
  const id = newId();
  send(text, id); send(text, id);
  return [id, waited];
}}"""


def settled_selector(mid: str) -> str:
    """The message shown settled: its reply saved, or the message marked not saved."""
    return (
        f'[data-testid=message][data-id="{mid}"][data-state="not-saved"], '
        f'[data-testid=message][data-role=assistant][data-id="{mid}"][data-state="saved"]'
    )


# What the page shows of a message once decided: "not-saved" where it offers a retry (on the
# message, or on its reply cut mid-stream), else the message's state ("absent": not shown).
BUBBLE_STATE_JS = """id => {
  const all = [...document.querySelectorAll(`[data-testid=message][data-id="${id}"]`)];
  const mine = all.find(el => el.dataset.role === "user");
  if (mine && mine.dataset.state === "pending") return false;
  if (all.some(el => el.dataset.state === "not-saved")) return "not-saved";
  return mine ? mine.dataset.state : "absent";
}"""
