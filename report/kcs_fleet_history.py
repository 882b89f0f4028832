"""The fleet's history across runs (kcs_fleet.py --history DIR; docs/fleet.md, "History").

Each merge writes a compact summary of itself to DIR/<UTC timestamp>.json and, before that,
reads the earlier ones kept there (the newest KEEP, --history-keep), one at a time, so that a card
whose outputs start to differ, that starts to fail, or whose kernels start to take longer shows
as a change since a date, and each card has a timeline on its node page. Nothing here changes
the merge's verdicts or exit status: the history says when, the merge says what is wrong now.

A card is a device's identity across runs (Fleet._name_cards): its uuid where its record gives
one, else host/device id. A summary holds:

    {"schema": "kcs-fleet-history", "version": 1, "created": "2026-11-28T05:00:00.123456Z",
     "verdict": "FLEET OK: ...",
     "models": {MODEL: {"text": "NVIDIA H100 ... (cuda, ..., kcs 1a2b3c)",
                        "answers": {KEY: DIGEST}}},           the most common answer of each result
     "cards": [{"card", "uuid", "host", "device", "task", "model": MODEL,
                "results", "failures", "disagrees", "straggles", "outcomes": {outcome: count},
                "problems": {KEY: [outcome, agreement]},      a failure kept, or not agreeing with peers
                "answers": {KEY: DIGEST},                     where the card's answer is not its model's
                "missing": [KEY],                             its model's answers it gave none of
                "times": {KEY: [median_s, lower_quartile_s, upper_quartile_s, repeats]}}]}

MODEL is a short digest of the model (backend, name, platform, driver, kcs build: the peers key);
KEY is "case<TAB>backend<TAB>kernel<TAB>dtype"; DIGEST the first 16 hex digits of the SHA-256 of
a result's output hashes. So a card's answer to a result is its own entry in "answers", else its
model's unless "missing" names it; a result that passed, agreed and was untimed costs a card
nothing beyond its counts. About 200 bytes a card untimed, 40 more a timed result.

The changes, for each card of this merge against its earlier runs:
- outputs: its answer to a result is not the one it gave in an earlier run of the same model
  (same build and driver: the bits must be the same), "since" the newest such run; or, for a
  result that no earlier run of its model answered (a new build or driver), it now disagrees
  with its peers where it agreed before. Two peers that differ have no majority; their own
  earlier answers tell which one changed, and the one that did not is not named.
- fails: it has failures or errors now and had none in an earlier run ("since" the latest such).
- slower: a kernel's timing now against the card's own earlier timings of the same model, by
  the peers rule's straggler test (kcs_peers.judge_speed, with the earlier runs as the peers).
"since" is the date of the latest earlier run in which the card did not show the change.
Memory: the summaries are read one at a time; kept of them are each current card's counts per
run, its own answers where they are not its model's (each run's answers of a model are kept once
for all its cards), and its earlier timings of the results timed now (cards x timed results x
KEEP).
"""

import datetime
import hashlib
import json
import os
import re
from collections import defaultdict

import kcs_fleet
import kcs_peers

SCHEMA, VERSION = "kcs-fleet-history", 1
KEEP = 30
CHANGES_KEPT = 20   # changes named per card; the rest counted
TIMELINE_KEYS = 3   # slower results whose medians a card's timeline shows
NAME = re.compile(r"^(\d{8}T\d{6}\.\d{6})Z\.json$")
AGREEMENT_PROBLEMS = ("disagrees", "undecided")
NONE, NO_ANSWERS = frozenset(), {}


class HistoryError(Exception):
    """The history folder cannot be used (not a folder, not writable): names it and the cause."""


def result_key(identity):
    """(case, backend, kernel, dtype) as one string."""
    return "\t".join(identity)


def split_key(key):
    parts = key.split("\t")
    return parts if len(parts) == 4 else [key, "", "", ""]


def answer_digest(answer):
    """The first 16 hex digits of the SHA-256 of an answer ((output name, sha256) pairs)."""
    return hashlib.sha256("\n".join(f"{name}\t{digest}" for name, digest in answer).encode()).hexdigest()[:16]


def model_id(model):
    return hashlib.sha256(json.dumps(model).encode()).hexdigest()[:16]


def display_date(created):
    """'2026-11-28T05:00:00.123456Z' -> '2026-11-28 05:00:00 UTC'."""
    return created[:10] + " " + created[11:19] + " UTC" if len(created) >= 19 else created


def snapshot(fleet, created):
    """The compact summary of this merge (the module's docstring), and for the comparison
    {device number: {KEY: timing summary}} of its timed results."""
    models, deviations, missing, times = {}, defaultdict(dict), defaultdict(list), defaultdict(dict)
    model_keys = defaultdict(int)
    for key, group in fleet.answers.items():
        model, identity = key[0], key[1:]
        text_key = result_key(identity)
        answers = sorted(group.items(), key=lambda item: -len(item[1]))
        mid = model_id(model)
        entry = models.get(mid)
        if entry is None:
            entry = models[mid] = {"text": None, "answers": {}}
        entry["answers"][text_key] = answer_digest(answers[0][0])
        model_keys[model] += 1
        for answer, numbers in answers[1:]:
            digest = answer_digest(answer)
            for number in numbers:
                deviations[number][text_key] = digest
    # A card that gave fewer answers than its model has: which ones it lacks (one pass over the
    # answers for those cards only; usually there are none).
    short = {d.number for d in fleet.device_list if d.hashed_count < model_keys.get(d.model, 0)}
    if short:
        for key, group in fleet.answers.items():
            present = set()
            for numbers in group.values():
                present.update(n for n in numbers if n in short)
            for number in short - present:
                if fleet.device_list[number].model == key[0]:
                    missing[number].append(result_key(key[1:]))
    for key, timed in fleet.timings.items():
        for number, summary, _ in timed:
            times[number][result_key(key[1:])] = summary
    cards = []
    for device in fleet.device_list:
        mid = model_id(device.model)
        entry = models.setdefault(mid, {"text": None, "answers": {}})
        entry["text"] = device.model_text()
        problems = {}
        for failure in device.failures:
            identity = (failure["case"], failure["backend"] or "", failure["kernel"] or "", failure["dtype"] or "")
            problems[result_key(identity)] = [failure["outcome"], "unhashed"]
        for kind, entries in (("disagrees", device.disagrees), ("undecided", device.undecided)):
            for found, _ in entries:
                identity = (found["case"], found["backend"], found["kernel"], found["dtype"])
                problems.setdefault(result_key(identity), ["pass", kind])[1] = kind
        cards.append({
            "card": device.card, "uuid": device.uuid, "host": device.host, "device": device.id,
            "task": device.member.task, "model": mid, "results": device.result_count,
            "failures": device.failure_count, "disagrees": len(device.disagrees) + len(device.undecided),
            "straggles": len(device.straggles), "outcomes": dict(sorted(device.outcomes.items())),
            "problems": problems, "answers": deviations.get(device.number, {}),
            "missing": missing.get(device.number, []),
            "times": {key: [s.get("median_s"), s.get("lower_quartile_s"), s.get("upper_quartile_s"),
                            s.get("repeats")] for key, s in times.get(device.number, {}).items()}})
    verdict = fleet.verdict()[1]
    return {"schema": SCHEMA, "version": VERSION, "created": created, "verdict": verdict,
            "models": models, "cards": cards}, times


def _problem(data):
    """What is wrong with a summary read back, or None."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        return f'not a fleet history summary (no "schema": "{SCHEMA}")'
    if data.get("version") != VERSION:
        return f"history summary version {data.get('version')!r}; this merge reads version {VERSION}"
    if not isinstance(data.get("created"), str):
        return "created: not a text"
    models = data.get("models")
    if not isinstance(models, dict) or not all(isinstance(m, dict) and isinstance(m.get("answers"), dict)
                                               for m in models.values()):
        return "models: not an object of models, each with its answers"
    if not isinstance(data.get("cards"), list):
        return "cards: not a list"
    for number, card in enumerate(data["cards"]):
        where = f"cards[{number}]"
        if not isinstance(card, dict) or not isinstance(card.get("card"), str):
            return f"{where}: not a card (an object with its \"card\")"
        if card.get("model") not in models:
            return f"{where}: model {str(card.get('model'))[:40]!r} is not in models"
        for field, kind in (("problems", dict), ("answers", dict), ("missing", list), ("times", dict)):
            if not isinstance(card.get(field), kind):
                return f"{where}: {field}: not a{'n object' if kind is dict else ' list'}"
        for field in ("results", "failures", "disagrees", "straggles"):
            if not isinstance(card.get(field), int) or isinstance(card.get(field), bool):
                return f"{where}: {field}: not a count"
        for key, value in card["times"].items():
            if not (isinstance(value, list) and len(value) == 4
                    and all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in value)
                    and isinstance(value[0], (int, float)) and value[0] > 0):
                return f"{where}: times[{key!r}]: not [median_s, lower_quartile_s, upper_quartile_s, repeats]"
    return None


class CardPast:
    """What the earlier runs say of one card of this merge."""

    def __init__(self):
        self.runs = []          # [(run number, results, failures, disagrees, straggles, same model)]
        self.agreement = []     # [(run number, {KEY} it did not agree on)]
        self.answers = []       # runs of its model: [(run number, model's answers, its own, its missing keys)]
        self.times = defaultdict(list)  # KEY -> [(run number, [median, lower, upper, repeats])]


class History:
    """One history folder: the earlier summaries compared with (compare), this one written
    (record)."""

    def __init__(self, folder, keep=KEEP):
        self.folder, self.keep = folder, keep
        if os.path.exists(folder) and not os.path.isdir(folder):
            raise HistoryError(f"--history {folder}: not a folder")
        self.runs = []          # the earlier runs compared: [{"file", "created", "verdict"}]
        self.bad_inputs = []    # (path, error)
        self.changed = []       # devices of this merge with changes
        self.created = None
        self._snapshot = None
        self._past, self._now = {}, {}  # card -> CardPast, its entry in this merge's summary

    def _names(self):
        if not os.path.isdir(self.folder):
            return []
        return sorted(name for name in os.listdir(self.folder) if NAME.match(name))

    def compare(self, fleet):
        """Reads the earlier summaries (oldest first) and sets each device's changes (its
        timeline is made when its page is written); fleet.history becomes this history."""
        fleet.history = self
        now = datetime.datetime.now(datetime.timezone.utc)
        self.created = now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        self._snapshot, now_times = snapshot(fleet, self.created)
        cards = {entry["card"]: (fleet.device_list[number], entry)
                 for number, entry in enumerate(self._snapshot["cards"])}
        past = defaultdict(CardPast)
        for name in self._names()[-self.keep:]:
            path = os.path.join(self.folder, name)
            try:
                with open(path, encoding="utf-8") as handle:
                    data = json.load(handle)
            except (OSError, ValueError, RecursionError) as error:
                self.bad_inputs.append((path, f"{path}: cannot read: {error}"))
                continue
            problem = _problem(data)
            if problem:
                self.bad_inputs.append((path, f"{path}: {problem}"))
                continue
            run = len(self.runs)
            self.runs.append({"file": path, "created": data["created"], "verdict": data.get("verdict")})
            for entry in data["cards"]:
                if entry["card"] not in cards:
                    continue
                device, now = cards[entry["card"]]
                card = past[entry["card"]]
                same = entry["model"] == now["model"]
                # Tuples, and one shared empty set and dict: a card's thirty runs cost a few
                # hundred bytes, not kilobytes.
                card.runs.append((run, entry["results"], entry["failures"], entry["disagrees"], entry["straggles"],
                                  same))
                card.agreement.append((run, frozenset(key for key, value in entry["problems"].items()
                                                      if isinstance(value, list) and len(value) == 2
                                                      and value[1] in AGREEMENT_PROBLEMS) or NONE))
                if same:
                    card.answers.append((run, data["models"][entry["model"]]["answers"], entry["answers"] or NO_ANSWERS,
                                         frozenset(entry["missing"]) or NONE))
                    for key, value in entry["times"].items():
                        if key in now_times.get(device.number, {}):
                            card.times[key].append((run, value))
            del data
        model_answers = {mid: model["answers"] for mid, model in self._snapshot["models"].items()}
        differing_keys = {}
        for name, (device, now) in cards.items():
            if name not in past:
                continue
            card = past[name]
            changes = self._changes(fleet, device, now, card, model_answers, differing_keys,
                                    now_times.get(device.number, {}))
            if changes:
                changes.sort(key=lambda change: change["since_run"])
                device.changes = changes
                self.changed.append(device)
        self.changed.sort(key=lambda device: (device.changes[0]["since_run"], device.id))
        self._past = dict(past)
        self._now = {name: now for name, (_, now) in cards.items()}

    def _date(self, run):
        return display_date(self.runs[run]["created"])

    def _changes(self, fleet, device, now, card, model_answers, differing_keys, now_times):
        changes, seen = [], set()

        def add(kind, key, run, text):
            """A change since the earlier run numbered run (self.runs)."""
            if len(changes) < CHANGES_KEPT:
                case, backend, kernel, dtype = split_key(key) if key else (None, None, None, None)
                changes.append({"kind": kind, "case": case, "backend": backend, "kernel": kernel, "dtype": dtype,
                                "since": self._date(run), "since_run": self.runs[run]["created"], "text": text})
            seen.add((kind, key))

        # Its own answers against its earlier runs of the same model, the newest first: a result
        # whose answer is not the one it gave in a run changed after that run.
        now_model, now_own, now_missing = model_answers[now["model"]], now["answers"], set(now["missing"])

        def mine(key):
            return now_own.get(key) or (now_model.get(key) if key not in now_missing else None)

        def then(past, key):
            _, then_model, then_own, then_missing = past
            return then_own.get(key) or (then_model.get(key) if key not in then_missing else None)

        decided = set()
        for past in reversed(card.answers):
            run, then_model, then_own, _ = past
            cache = (now["model"], run)
            if cache not in differing_keys:  # where the two runs' model answers differ, once a pair of runs
                differing_keys[cache] = {k for k in set(now_model) | set(then_model)
                                         if now_model.get(k) != then_model.get(k)}
            for key in sorted((differing_keys[cache] | set(now_own) | set(then_own)) - decided):
                answer, before = mine(key), then(past, key)
                if answer and before and answer != before:
                    decided.add(key)
                    case, backend, kernel, _ = split_key(key)
                    add("outputs", key, run,
                        f"{case} [{backend} {kernel}]: its outputs differ from its own in the run of {self._date(run)}")
        # Disagreeing with its peers where it agreed before, for a result that no earlier run of its
        # model answered (a new build or driver): where one did and it gave the same answer, a peer
        # changed, not it (two peers that differ have no majority to say which).
        for key, value in sorted(now["problems"].items()):
            if value[1] not in AGREEMENT_PROBLEMS or key in decided or \
                    any(then(past, key) for past in card.answers):
                continue
            for run, keys in reversed(card.agreement):
                if key not in keys:
                    case, backend, kernel, _ = split_key(key)
                    add("outputs", key, run,
                        f"{case} [{backend} {kernel}]: {value[1]} with its peers; "
                        f"agreed in the run of {self._date(run)}")
                    break
        # Failing where it had no failure.
        if now["failures"]:
            for run, _, failures, _, _, _ in reversed(card.runs):
                if failures == 0:
                    add("fails", None, run,
                        f"{now['failures']} failed or errors; none in the run of {self._date(run)}")
                    break
        # Slower than its own earlier runs, by the straggler rule.
        for key, earlier in sorted(card.times.items()):
            timings = {("run", run): {"median_s": value[0], "lower_quartile_s": value[1],
                                      "upper_quartile_s": value[2], "repeats": value[3] or 0}
                       for run, value in earlier}
            for timing in timings.values():
                for field in ("lower_quartile_s", "upper_quartile_s"):
                    if timing[field] is None:
                        del timing[field]
                    else:
                        timing[field] = float(timing[field])
                timing["median_s"] = float(timing["median_s"])
            timings["now"] = now_times[key]
            speed = kcs_peers.judge_speed([("card", t["median_s"],
                                            t.get("lower_quartile_s"), t.get("upper_quartile_s"))
                                           for t in timings.values()])[-1]
            if speed is None or not speed.straggler:
                continue
            threshold, before = speed.threshold, speed.peer_median_s
            since = earlier[0][0]
            for run, value in reversed(earlier):
                if value[0] / before - 1 <= threshold:
                    since = run
                    break
            case, backend, kernel, _ = split_key(key)
            add("slower", key, since,
                f"{case} [{backend} {kernel}]: {kcs_fleet.fmt_time(now_times[key]['median_s'])} against "
                f"{kcs_fleet.fmt_time(before)} in its {len(earlier)} earlier run{'s' if len(earlier) != 1 else ''}: "
                f"{speed.ratio:.2f}x the median of their medians, beyond their noise and the minimum effect "
                f"({threshold:.0%})")
        if len(seen) > len(changes):
            latest = max(changes, key=lambda change: change["since_run"])
            changes.append({"kind": "more", "case": None, "backend": None, "kernel": None, "dtype": None,
                            "since": latest["since"], "since_run": latest["since_run"],
                            "text": f"and {len(seen) - len(changes)} more changes"})
        return changes

    def timeline(self, device):
        """The card's timeline, made when its node page is written: rows, oldest first, of its
        earlier runs and this one (counts, and the medians of up to TIMELINE_KEYS results that
        became slower); None for a card with no earlier run."""
        if device.card not in self._past:
            return None
        card, now, changes = self._past[device.card], self._now[device.card], device.changes
        keys = [result_key((c["case"], c["backend"], c["kernel"], c["dtype"]))
                for c in changes if c["kind"] == "slower"][:TIMELINE_KEYS]
        medians = {key: dict((run, value[0]) for run, value in card.times.get(key, [])) for key in keys}
        rows = []
        for run, results, failures, disagrees, straggles, same in card.runs:
            rows.append({"created": self._date(run), "now": False, "same_model": same, "results": results,
                         "failures": failures, "disagrees": disagrees, "straggles": straggles,
                         "medians": [medians[key].get(run) for key in keys]})
        rows.append({"created": display_date(self.created) + " (this merge)", "now": True, "same_model": True,
                     "results": now["results"], "failures": now["failures"], "disagrees": now["disagrees"],
                     "straggles": now["straggles"],
                     "medians": [(now["times"].get(key) or [None])[0] for key in keys]})
        return {"keys": [split_key(key) for key in keys], "rows": rows}

    def record(self, fleet):
        """Writes this merge's summary (DIR/<UTC timestamp>.json, named after every summary there)
        and removes the oldest beyond keep; (path written, how many removed)."""
        if self._snapshot is None:
            self.compare(fleet)
        try:
            os.makedirs(self.folder, exist_ok=True)
            names = self._names()
            stamp = datetime.datetime.strptime(self.created, "%Y-%m-%dT%H:%M:%S.%fZ")
            if names:
                latest = datetime.datetime.strptime(NAME.match(names[-1]).group(1), "%Y%m%dT%H%M%S.%f")
                if latest >= stamp:  # a clock behind another host's that wrote here: keep the order
                    stamp = latest + datetime.timedelta(microseconds=1)
            name = stamp.strftime("%Y%m%dT%H%M%S.%f") + "Z.json"
            path = os.path.join(self.folder, name)
            partial = path + ".partial"
            with open(partial, "w", encoding="utf-8") as handle:
                json.dump(self._snapshot, handle, separators=(",", ":"), allow_nan=False)
            os.replace(partial, path)
            names = self._names()
            removed = names[:-self.keep] if len(names) > self.keep else []
            for old in removed:
                os.remove(os.path.join(self.folder, old))
        except (OSError, ValueError) as error:
            raise HistoryError(f"--history {self.folder}: cannot write this merge's summary: {error}") from error
        return path, len(removed)

    def kept_text(self, removed):
        kept = len(self._names())
        return (f"{kept} summar{'y' if kept == 1 else 'ies'} kept, at most the newest {self.keep}"
                + (f"; {removed} older removed" if removed else "")
                + f"; compared with {len(self.runs)} earlier")

    def summary(self):
        """The history's part of the JSON summary."""
        return {"folder": self.folder, "keep": self.keep, "created": self.created,
                "compared": [run["created"] for run in self.runs],
                "bad_inputs": [{"file": path, "error": error} for path, error in self.bad_inputs],
                "changed": [{"device": d.id, "card": d.card, "since": d.changes[0]["since"],
                             "since_run": d.changes[0]["since_run"], "changes": d.changes}
                            for d in self.changed]}
