"""TTL evidence shared by the TTL diagnoses: consecutive *settled* PTTL observations of the
conversation key and the sends between them. A read that raced an in-flight write is never
used (the prober marks it unsettled), and a pair is judged only when the elapsed time dwarfs how
well the two reads' moments are known.

A settled read is a claim that no write of the app was still on its way. A later read of the same
trial can refute it: the key changed -- grew, or had its TTL renewed -- with no send in between.
Then some write landed after a read the prober took for settled (an app that writes after it
answers, one slow step at a time), and none of that trial's TTL reads is evidence of a TTL rule:
ambiguous evidence is unknown, never a TTL cause."""

from __future__ import annotations

from dataclasses import dataclass

from lab.model.history import Send, Trial, TtlObs

TTL_SLACK_MS = 5  # PTTL is read over a separate connection: a few ms of jitter are not evidence


@dataclass(frozen=True)
class Pair:
    a: TtlObs
    b: TtlObs
    between: tuple[Send, ...]  # the sends after a's turn, up to b's
    # From the store's record: the app's last write to the key before b, less its last before a --
    # how far apart the two hypotheses put b (renewed at each write, or only decaying); None
    # where the record does not say.
    gap_ms: float | None = None

    @property
    def elapsed_ms(self) -> float:
        return (self.b.t - self.a.t) * 1000

    @property
    def tolerance_ms(self) -> float:
        return TTL_SLACK_MS + (self.a.rtt_ms + self.b.rtt_ms) / 2

    @property
    def grew(self) -> bool:
        """A write landed in between (the key has more values)."""
        return self.b.length > self.a.length

    @property
    def judgeable(self) -> bool:
        # Not renewed: b = a - elapsed, to within the tolerance. Renewed: b = a - elapsed + (the
        # time between the writes before each read: the record's gap, else about `elapsed`). Told
        # apart only when that dwarfs the tolerance (slow reads on a busy machine would otherwise
        # pass a renewal within one short turn for "not renewed"). Read 241 ms after its turn's
        # writes with a 134 ms round trip, a pair 309 ms apart whose writes were 126 ms apart fit
        # both within 74 ms: a correct app drawn ttl_not_renewed in a CI run (2026-12-06).
        told = self.elapsed_ms >= 4 * self.tolerance_ms and (self.gap_ms is None or self.gap_ms > 2 * self.tolerance_ms)
        return self.a.pttl_ms >= 0 and self.b.pttl_ms >= 0 and self.grew and told

    @property
    def decayed_only(self) -> bool:
        return abs(self.b.pttl_ms - (self.a.pttl_ms - self.elapsed_ms)) <= self.tolerance_ms

    @property
    def renewed(self) -> bool:
        return self.b.pttl_ms - (self.a.pttl_ms - self.elapsed_ms) > self.tolerance_ms

    @property
    def acked_only(self) -> bool:
        """Every send in between was acknowledged: the writes the TTL rule is about succeeded."""
        return bool(self.between) and all(s.outcome == "ok" for s in self.between)

    def text(self, trial_id: str) -> str:
        return (
            f"trial {trial_id}: PTTL {self.a.pttl_ms} ms after turn {self.a.turn}, {self.b.pttl_ms} ms "
            f"after turn {self.b.turn} {self.elapsed_ms:.0f} ms later (the key grew "
            f"{self.a.length} -> {self.b.length})"
        )


def _settled(t: Trial) -> list[TtlObs]:
    return [o for o in t.ttl if o.settled and o.pttl_ms != -2]


def contradicted(t: Trial) -> str | None:
    """Why the trial's settled reads refute each other, if they do: a later read shows a write
    (more values, a TTL renewed, set or removed) with no send after the earlier one."""
    obs = _settled(t)
    for a, b in zip(obs, obs[1:]):
        p = Pair(a, b, tuple(s for s in t.sends if a.turn < s.turn <= b.turn))
        if p.between:
            continue
        if b.length != a.length:
            what = f"the key went {a.length} -> {b.length} values"
        elif (a.pttl_ms < 0) != (b.pttl_ms < 0):
            what = f"its PTTL went {a.pttl_ms} -> {b.pttl_ms} ms"
        elif a.pttl_ms >= 0 and p.renewed:
            what = f"its TTL was renewed ({a.pttl_ms} -> {b.pttl_ms} ms, {p.elapsed_ms:.0f} ms later)"
        else:
            continue
        return (
            f"after turn {b.turn} {what} with no send in between: a write landed after a read taken "
            "for settled, so no TTL read of this trial is evidence"
        )
    return None


def pairs(t: Trial) -> list[Pair]:
    """Consecutive settled reads with the sends between them; none where the reads refute each
    other (``contradicted``)."""
    if contradicted(t):
        return []
    obs = _settled(t)
    writes = sorted(float(r["t"]) for r in t.store or [] if r.get("write") and r.get("conn") != "lab")
    return [
        Pair(a, b, tuple(s for s in t.sends if a.turn < s.turn <= b.turn), _gap_ms(writes, a.t, b.t))
        for a, b in zip(obs, obs[1:])
    ]


def _gap_ms(writes: list[float], ta: float, tb: float) -> float | None:
    """The app's last write before ``tb`` less its last before ``ta`` (None: the record has none)."""
    before_a, before_b = [w for w in writes if w < ta], [w for w in writes if w < tb]
    return (before_b[-1] - before_a[-1]) * 1000 if before_a and before_b else None


# What sets a TTL: the EXPIRE family, and a whole-value write carrying one (SET ... EX 60).
EXPIRES = ("EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT", "GETEX")
TTL_OPTIONS = ("EX", "PX", "EXAT", "PXAT")
CARRY_TTL = ("RENAME", "RENAMENX", "RESTORE", "COPY", "MOVE")


def sets_ttl(t: Trial) -> bool:
    """The store's record shows the app setting a TTL on the key."""
    return (counted := ttl_renewals(t)) is not None and counted[1] > 0


def ttl_renewals(t: Trial) -> tuple[int, int, int] | None:
    """By the record: (the app's writes of the key, the TTLs it set, those set after the first
    -- renewals). ``EXPIRE ... NX`` after the first sets nothing (the key has a TTL by then): it
    is no renewal. None: no record, or no write in it."""
    app = [r for r in t.store or [] if r["conn"] != "lab"]
    writes = [r for r in app if r["write"]]
    if not writes or any(r["cmd"] in CARRY_TTL for r in app):
        return None  # a key renamed or restored onto this one brings a TTL set on another key
    ttl = [
        r
        for r in app
        if r["cmd"] in (*EXPIRES, "SETEX", "PSETEX")
        or (r["cmd"] == "SET" and any(a.upper() in TTL_OPTIONS for a in r["args"]))
    ]
    sets = [
        r for i, r in enumerate(ttl) if i == 0 or not (r["cmd"] in EXPIRES and "NX" in [a.upper() for a in r["args"]])
    ]
    return len(writes), len(sets), max(0, len(sets) - 1)
