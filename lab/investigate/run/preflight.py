"""The contract check before any experiment: one send and one history read, no fault."""

from __future__ import annotations

import asyncio

from lab.investigate.evidence.key_home import KeyVerdict, db_of, follow
from lab.model import context
from lab.model.history import Trial
from lab.investigate.run import groups
from lab.investigate.run.blackbox import Prober
from lab.investigate.run.experiments import Experiment
from lab.investigate.spec.parse import Spec


async def preflight(prober: Prober, attempts: int = 3) -> str:
    """One send and one history read, no fault, through the runner as every trial (a hung step
    ends at its deadline, unknown): the target must answer in its spec's form, or
    the investigation would measure the spec, not the app. A contract error stops the run at
    once: a 4xx to the send, a 2xx whose body is not of the spec's form, the message shown under
    another role. What an app may do by itself -- 5xx, a history that never settles, the message
    missing (lost) -- is for the experiments to find: retried, then reported as a warning.
    Returns a line of evidence."""
    from lab.investigate.target.process import TargetError

    spec = prober.spec
    notes: list[str] = []
    for attempt in range(1, attempts + 1):
        t = (
            await groups.one(
                prober, Experiment("none", (), "settled", 1, "contract check"), f"preflight{attempt}", attempt
            )
        ).trial
        if not t.sends:
            raise TargetError(
                f"the contract check could not send: {t.unknown}",
                "check the spec's [page] selectors or the target's log",
            )
        s = t.sends[0]
        rows = t.final_rows or []
        roles = sorted({r.role for r in rows if s.text in r.text})
        hard = contract_errors(spec, t, roles)
        if hard:
            raise TargetError(
                "the target answers outside its spec:\n  - " + "\n  - ".join(hard),
                "fix the spec's [chat]/[history] sections (or the app); nothing was left running",
            )
        if s.outcome == "ok" and roles:
            return (
                f"contract ok: send {s.status} in {s.ms or 0:.0f} ms, history shows it"
                + (f" (after {attempt - 1} attempt(s) that did not: {'; '.join(notes)})" if notes else "")
                + await _the_key(prober, t)
                + _no_reply_in_answer(spec, t)
            )
        if s.outcome != "ok":
            notes.append(f"send answered {s.status or s.reason}{' (HTML)' if s.html else ''}")
        elif t.final_rows is None:
            notes.append(t.unknown or "the history never settled")
        else:
            notes.append(f"the message acknowledged ({s.status}) is not in the settled history ({len(rows)} rows)")
    return (
        f"warning: the contract could not be confirmed in {attempts} attempts ({'; '.join(notes)}); "
        "the answers were in the spec's form, so this may be the app itself: the experiments go on "
        "(if every trial comes out unknown, check the spec)"
    )


def contract_errors(spec: Spec, t: Trial, roles: list[str]) -> list[str]:
    """What the contract check's trial shows of a spec that does not fit the app: a 4xx to the
    send or a 2xx outside the spec's form, a history outside its form, the message shown under
    another role, the app's page not behaving as its selectors say."""
    s = t.sends[0]
    hard: list[str] = []
    if (
        s.status is not None
        and 400 <= s.status < 500
        or s.outcome == "info"
        and s.status is not None
        and 200 <= s.status < 300
    ):
        hard.append(
            f"POST {spec.chat.path} {{{spec.chat.message_field!r}: ...}} answered {s.status}"
            f"{' as an HTML page' if s.html else ''}: {s.reason.strip()[:160]}; "
            f"expected 2xx" + (f" with JSON at {spec.chat.reply_path}" if spec.chat.reply_path else "")
        )
    outside = [e for e in t.errors if e.startswith("history outside the spec: ")]
    if outside:
        hard.append(
            f"GET {spec.history.path} answered 2xx but {outside[0]}; expected "
            f"a JSON list of {spec.history.format} at {spec.history.items}"
        )
    if roles and "user" not in roles:
        shown = {"assistant": spec.history.assistant_role}.get(roles[0], roles[0])
        hard.append(
            f"GET {spec.history.path} shows the message just sent under role {shown!r}; "
            f"expected history.user_role = {spec.history.user_role!r}"
        )
    # [model]: an acknowledged send whose model call the stand-in never saw -- the app's calls go
    # elsewhere (a variable it does not read, a running app started without them): everything the
    # lab would say of the model's side would be about calls it cannot see.
    if spec.model is not None and t.model_calls is not None and s.outcome == "ok":
        if not any(context.served(t, c) is s for c in t.model_calls):
            hard.append(
                f"the send was answered {s.status} but the stand-in model saw no call carrying its message: "
                f"the app must read {', '.join(spec.model.env)} (the stand-in's address, as this run printed; "
                "a running app must be started with them), or [model] env must name the variables it reads"
            )
    # The app's page did not behave as its selectors say: the spec's [page] is wrong.
    hard += [
        f"{e[len('page: ') :]}; fix [page] in the spec" for e in [s.reason, *t.errors] if e and e.startswith("page: ")
    ]
    return hard


async def _the_key(prober: Prober, t: Trial) -> str:
    """The contract's message in the spec's [redis] key, or where it is instead: the db the app
    writes (read from then on, said), a key the spec does not name (a contract error), a doubt
    (said beside the contract line). "" where the key holds it or the spec names none."""
    from lab.investigate.target.process import TargetError

    spec, rec, s = prober.spec, t.redis_final, t.sends[0]
    if not spec.redis.key or rec is None:
        return ""
    url = prober.keys.redis_url
    v: KeyVerdict = await asyncio.to_thread(follow, prober.keys, prober.store, spec.redis.key, rec, s.turn, s.text)
    if v.error:
        raise TargetError(
            v.error,
            "fix [redis] key (or [session], where the key is named after it), or let `lab init` draft "
            "the spec again: it names the key the app wrote",
        )
    if v.use_db is not None:  # read and followed there from now on (the record's other dbs are not the app's)
        return f"; the app keeps it in db {v.use_db} (the lab's URL named db {db_of(url)}): read there from now on"
    return f"\n  warning: {v.note}" if v.note else ""


def _no_reply_in_answer(spec: Spec, t: Trial) -> str:
    """A warning where the spec gives the answer no reply ([chat] reply_path unset, no stream,
    socket, page or HTML, not polled) while the settled history holds one after the message: the
    lab takes the answer as the reply's, and an app whose page polls the history for the reply
    is then judged wrongly -- its reply stored after an answer that never claimed it
    (docs/app-shapes.md, "A reply the page polls for"). "" otherwise."""
    carried = spec.chat.reply_path or spec.stream or spec.transport or spec.page or spec.history.format == "html"
    carried = carried or spec.chat.reply_from == "history"  # said: answered by the read that shows it
    rows, sent = t.final_rows or [], t.sends[0].text
    at = next((i for i, r in enumerate(rows) if r.role == "user" and sent in r.text), None)
    if carried or at is None or not any(r.role == "assistant" for r in rows[at + 1 :]):
        return ""
    return (
        "\n  warning: the spec names no reply in the chat's answer ([chat] reply_path unset, no [stream]), "
        "and the history holds one: where the answer holds it, give reply_path; where the page polls the "
        'history for it, give [chat] reply_from = "history" (docs/app-shapes.md)'
    )
