"""The driver (Jepsen's client): one trial's conversation in real Chromium. The browser and its
launch (browser), pooled contexts reused trial after trial (slots), the chat page's scripts
(page_js), the page object that sends, refreshes on a trigger and reads what the page shows
(driver), the sends as the browser's network events record them (netlog), the two send patterns
that are not one message at a time (concurrent_sends) and the whole conversation of a trial
(conversation). The built-in service as the runner's client, white box (builtin): Redis's expiry
events and commands (observe), whether a trial's experiment held by the backend's own events
(preconditions), a failing trial's folder of artifacts (artifacts).

May import: lab.common, lab.stack, lab.faults, lab.plan, lab.model."""
