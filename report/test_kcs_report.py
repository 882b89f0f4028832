"""Tests of the kcs report: the case files' Markdown, reading results, the baseline comparison, and
the pages the command writes (self-contained, valid embedded PNGs, the key tables, the woven op
page, the exit status a CI gate relies on).

    /usr/bin/python3 -m unittest discover -s report -p 'test_*.py'

Standard library only; results files are built in memory from the schema (kcs_fixtures.py).
"""

import base64
import contextlib
import copy
import html.parser
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import browser_check  # noqa: E402
import kcs_fixtures as fx  # noqa: E402
import kcs_plots  # noqa: E402
import kcs_report  # noqa: E402
from kcs_compare import CompareError, Comparison, Options, classify_correctness, classify_speed  # noqa: E402
import kcs_results  # noqa: E402
from kcs_results import ResultsError, device_uuid, results_from_data  # noqa: E402
from kcs_stats import quantile, rank_sum_test  # noqa: E402

SCRIPT = os.path.join(HERE, "kcs_report.py")


# A roofline is a function of its plot data and element id alone (kcs_plots.roofline_svg; the
# fixed svg.hashsalt makes its ids the same at every call), and it is most of what these tests
# spend: about 0.25 s of matplotlib layout and drawing each, and the tests' reports draw the same
# device's roofline from the same data again and again (173 drawings of 91 distinct inputs). So
# this module draws each distinct (plot, id) once, through the real function, and gives the same
# text back when a later report asks for it again: every report still holds what kcs_plots
# draws for its data. The key is the repr of the plain data (dicts, lists, tuples, strings,
# numbers: equal reprs are equal values), so anything that differs draws afresh.
_drawn_rooflines = {}
_draw_roofline = kcs_plots.roofline_svg


def _roofline_once(plot, ident):
    key = repr((plot, ident))
    if key not in _drawn_rooflines:
        _drawn_rooflines[key] = _draw_roofline(plot, ident)
    return _drawn_rooflines[key]


def setUpModule():
    kcs_plots.roofline_svg = _roofline_once


def tearDownModule():
    kcs_plots.roofline_svg = _draw_roofline
    _drawn_rooflines.clear()

CASE_FILE = """# Sum of squares <for tests>

Prose with `x < y && z`, a <b>tag</b> & an ampersand, **bold**, *emphasis*, snake_case_name,
and a [link to the spec](../docs/sumsq.md).

```kcs-case
case: f64-n93
op: sumsq
dtype: f64
sizes: n=93
input x: uniform lo=-1 hi=1
expect: golden
```

Some prose between cases.

```kcs-case
case: f64-n1000003
op: sumsq
dtype: f64
sizes: n=1000003
input x: normal
expect: golden
tags: perf
```

```kcs-case
case: f64-not-run
op: sumsq
dtype: f64
sizes: n=5
input x: normal
expect: golden
```

```c
/* a fence that is prose: <not a tag> */
```
"""


# What `kcs list --json` says of CASE_FILE's blocks, in order (tests/report_test.sh holds this
# stand-in to the runner's own output for CASE_FILE, seeds and paths aside, so it cannot drift).
CASE_FIELDS = [
    {"name": "sumsq/f64-n93", "op": "sumsq", "dtype": "f64", "sizes": {"n": 93}, "params": {},
     "inputs": [{"name": "x", "distribution": "uniform", "params": {"lo": -1, "hi": 1}}],
     "expect": "golden", "sample": 0, "tags": [], "bound_tight": None},
    {"name": "sumsq/f64-n1000003", "op": "sumsq", "dtype": "f64", "sizes": {"n": 1000003}, "params": {},
     "inputs": [{"name": "x", "distribution": "normal", "params": {}}],
     "expect": "golden", "sample": 0, "tags": ["perf"], "bound_tight": None},
    {"name": "sumsq/f64-not-run", "op": "sumsq", "dtype": "f64", "sizes": {"n": 5}, "params": {},
     "inputs": [{"name": "x", "distribution": "normal", "params": {}}],
     "expect": "golden", "sample": 0, "tags": [], "bound_tight": None},
]


def fence_lines(text):
    """The lines (from 1) of a case file's kcs-case fences, where the runner says its cases start."""
    return [number + 1 for number, line in enumerate(text.splitlines()) if line.strip() == "```kcs-case"]


def case_list(cases_dir, fields_by_file, problems=()):
    """A `kcs list --json` document (docs/runner.md) for the case files of cases_dir: the cases of
    each file (fields_by_file[file name], in order) at its fences' lines."""
    cases = []
    for name, fields in sorted(fields_by_file.items()):
        path = os.path.join(cases_dir, name)
        with open(path, encoding="utf-8") as handle:
            lines = fence_lines(handle.read())
        cases += [dict(case, file=path, line=line) for case, line in zip(fields, lines)]
    return {"schema": "kcs-cases", "version": 1, "cases_dir": cases_dir, "cases": cases,
            "problems": [dict(problem, file=os.path.join(cases_dir, problem["file"])) for problem in problems]}


def timed_entry(doc, case, device_id):
    """The results[] entry of case on device_id in a document."""
    return next(r for r in doc["results"] if r["case"] == case and r["device"] == device_id)


def scale_timing(entry, factor, spread=None):
    """Makes a timed entry factor times slower, optionally resetting its quartiles to median*(1 -/+ spread)."""
    fx.slow_down(entry, factor)
    kernel = entry["timing"]["kernel"]
    if spread is not None:
        kernel["lower_quartile_s"] = kernel["median_s"] * (1 - spread)
        kernel["upper_quartile_s"] = kernel["median_s"] * (1 + spread)


class Images(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.sources = []
        self.attributes = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("src", "href", "srcset", "poster", "data"):
                self.attributes.append((tag, name, value or ""))
        if tag == "img":
            self.sources.append(dict(attrs).get("src", ""))


def case_file_html(text, blocks=None, places=None):
    """A case file rendered with each kcs-case block shown as <div>CASE</div>, its lines kept in
    blocks and its first and last line in places."""
    def render_case_block(lines, first, last):
        (blocks if blocks is not None else []).append(lines)
        (places if places is not None else []).append((first, last))
        return "<div>CASE</div>"
    return kcs_report.case_file_html(text, render_case_block, lambda url: "REWRITTEN/" + url)


class CaseFileTests(unittest.TestCase):
    def test_html_in_prose_is_escaped(self):
        out = case_file_html('a <script>alert("x")</script> & b > c `x < y`')
        self.assertNotIn("<script", out)
        self.assertIn("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; b &gt; c <code>x &lt; y</code>", out)

    def test_kcs_case_blocks_are_woven_and_other_fences_stay_code(self):
        blocks, places = [], []
        out = case_file_html("```kcs-case\ncase: a\nop: sumsq\n```\n\n```c\nint a = b < c;\n```\n"
                             "  ```kcs-case\n  case: b\n  ```", blocks, places)
        self.assertEqual(blocks, [["case: a", "op: sumsq"], ["case: b"]])
        self.assertEqual(places, [(1, 4), (9, 11)])  # the fences' lines: where the runner says a case is
        self.assertEqual(out.count("<div>CASE</div>"), 2)
        self.assertIn('<pre><code class="language-c">int a = b &lt; c;\n</code></pre>', out)

    def test_headings_get_unique_ids_and_anchors(self):
        out = case_file_html("# Title `x_y` <z>\n\n## Part\n\n## Part\n\ntext ## not a heading")
        self.assertIn('<h1 id="title-xy-z">Title <code>x_y</code> &lt;z&gt;'
                      '<a class="anchor" href="#title-xy-z" aria-hidden="true">#</a></h1>', out)
        self.assertIn('<h2 id="part">', out)
        self.assertIn('<h2 id="part-2">', out)
        self.assertIn("<p>text ## not a heading</p>", out)

    def test_links_are_rewritten_and_images_never_load(self):
        out = case_file_html("[spec](../docs/sumsq.md#bound) ![plot <1>](plot.png) [bad](javascript:alert(1))")
        self.assertIn('<a href="REWRITTEN/../docs/sumsq.md#bound">spec</a>', out)
        self.assertIn('<a href="REWRITTEN/plot.png">[image: plot &lt;1&gt;]</a>', out)
        self.assertNotIn("<img", out)
        self.assertNotIn('href="javascript', out)


class Scratch(unittest.TestCase):
    """A scratch directory with a case file, and the command run in-process."""

    def setUp(self):
        self.scratch = tempfile.TemporaryDirectory(prefix="kcs-report-test-")
        self.dir = self.scratch.name
        self.cases = os.path.join(self.dir, "cases")
        os.makedirs(self.cases)
        with open(os.path.join(self.cases, "sumsq.md"), "w", encoding="utf-8") as handle:
            handle.write(CASE_FILE)
        self.new = fx.demo_new()
        self.case_fields = {"sumsq.md": CASE_FIELDS}
        self.case_problems = []

    def write_case_list(self):
        """The runner's list of self.cases, as tests/report_test.sh checks that the runner writes it."""
        return self.write("case-list.json", case_list(self.cases, self.case_fields, self.case_problems))

    def tearDown(self):
        self.scratch.cleanup()

    def write(self, name, doc):
        path = os.path.join(self.dir, name)
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(doc, handle, allow_nan=False, default=str)
        return path

    def write_text(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        return path

    def report(self, *paths, baseline=None, output="out", extra=()):
        """Runs the command in-process: (exit status, stdout and stderr, output directory)."""
        out_dir = os.path.join(self.dir, output)
        argv = [*paths, "--cases", self.cases, "--case-list", self.write_case_list(), "--output", out_dir, *extra]
        if baseline:
            argv += ["--baseline", baseline]
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            status = kcs_report.main(argv)
        return status, stdout.getvalue() + stderr.getvalue(), out_dir

    def compare(self, old, new, extra=()):
        """(exit status, output, index.html) of new compared with the baseline old (documents)."""
        status, out, out_dir = self.report(self.write("new.json", new), baseline=self.write("base.json", old),
                                           extra=extra)
        index = os.path.join(out_dir, "index.html")
        return status, out, self.read(index) if os.path.isfile(index) else ""

    def read(self, path):
        with open(path, encoding="utf-8") as handle:
            return handle.read()

    def section(self, index, ident, end="</table>"):
        """The part of index.html from the element with this id to the first end after it."""
        part = index[index.index(f'id="{ident}"'):]
        return part[:part.index(end)]


class ResultsTests(unittest.TestCase):
    def test_nonfinite_strings_become_floats(self):
        doc = fx.document([fx.CUDA], [fx.result("sumsq/f64-nan", fx.CUDA, "k", fraction="nan",
                                                expected="nan", actual="inf")])
        run = results_from_data(json.loads(json.dumps(doc)))
        worst = run.results[0]["accuracy"]["worst"]
        self.assertTrue(math.isnan(run.results[0]["accuracy"]["fraction_of_bound"]))
        self.assertTrue(math.isnan(worst["expected"]))
        self.assertEqual(worst["actual"], math.inf)

    def test_rejects_other_schemas_and_versions(self):
        with self.assertRaisesRegex(ResultsError, "not a kcs results file"):
            results_from_data({"schema": "other", "version": 1, "results": []}, "x.json")
        with self.assertRaisesRegex(ResultsError, "version 3"):
            results_from_data({"schema": "kcs-results", "version": 3, "results": []}, "x.json")
        for version in (1, 2):
            self.assertEqual(results_from_data({"schema": "kcs-results", "version": version, "results": []}).version,
                             version)

    def test_uuid_is_read_from_details(self):
        self.assertEqual(device_uuid(fx.CUDA), "GPU-5ad8e6b4-0c1f-4b7e-9a52-3f0e1d2c4b6a")
        self.assertEqual(device_uuid({"details": "uuid=abc"}), "abc")
        self.assertIsNone(device_uuid({"details": "sm_90; myuuid=x"}))
        self.assertIsNone(device_uuid(fx.POCL))



class FastChecks(unittest.TestCase):
    """kcs_results' fast path (_clean_result, before _check_result) refuses exactly what the full
    checks refuse, with the same messages, and leaves a well-formed document exactly as they do:
    every field of a few well-formed results, in turn, given each of many wrong or unusual values
    or removed, is checked both ways."""

    ODD_VALUES = (None, True, False, 0, 1, -1, 7, 2.5, -2.5, 0.0, 10 ** 400, math.nan, math.inf, "nan", "inf",
                  "-inf", " NaN ", "Infinity", "x", "", [], [1], [True], [1.5], [-1], [3, 1], {}, {"text": "t"})

    @staticmethod
    def well_formed():
        """Results of every kind the fast path passes: a check with a histogram and a worst element
        (non-finite ones too), a timed result with samples, a kernel library, an explained expected
        failure, a check object, a skip of no device."""
        samples = fx.noisy_samples(2e-4, seed=3, count=12)
        checked = fx.result("sumsq/f64-n93", fx.CUDA, "k", expected="nan", actual="inf")
        checked["accuracy"]["fraction_histogram"] = {"log2_upper": [-3, -2, -1, 0], "counts": [5, 0, 2, 1],
                                                     "above": 0}
        checked["bound_tight"] = "the sum of n terms rounds n times"
        checked["output_hashes"] = {"s": "a" * 64}
        timed = fx.result("sumsq/f64-n7", fx.CUDA, "k", median=2e-4, samples=samples)
        timed["kernel_library"] = "cuBLAS"
        expected = fx.result("sumsq/f32-n7", fx.CUDA, "k", status="fail", message="out[0] outside its bound")
        expected["expected"] = {"outcome": "fail", "reason": "a known compiler bug", "met": True}
        expected["explanation"] = {"text": "flushes subnormals"}
        with_check = fx.result("softmax/f32-cols33", fx.POCL, "rows", status="fail")
        with_check["check"] = {"fraction_histogram": {"log2_upper": [-1.5, 0], "counts": [3, 4], "above": 2}}
        skip = fx.result("sumsq/f64-n100000000", None, None, status="skip", message="tagged large")
        return fx.document([fx.CUDA, fx.POCL], [checked, timed, expected, with_check, skip])

    @staticmethod
    def places(value, path=()):
        """The path of every field and list item under value."""
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for key, item in items:
            yield path + (key,)
            yield from FastChecks.places(item, path + (key,))

    @staticmethod
    def checked(document, fast):
        """(every problem found, the document after the checks, as repr shows it: 1 and 1.0 apart)."""
        problems = kcs_results._Problems("f.json")
        try:
            kcs_results._check_document(problems, document, fast=fast)
        except OverflowError as error:  # neither way may escape with one; kept apart to be seen
            return ("OverflowError", str(error)), None
        return problems.items, repr(document)

    def both_ways(self, document):
        fast = self.checked(copy.deepcopy(document), True)
        slow = self.checked(copy.deepcopy(document), False)
        self.assertEqual(fast, slow)
        return fast[0]

    def test_well_formed_results_take_the_fast_path_and_end_alike(self):
        document = json.loads(json.dumps(self.well_formed()))
        taken = [kcs_results._clean_result(copy.deepcopy(r)) for r in document["results"]]
        self.assertEqual(taken, [True, True, False, True, True])  # an expectation: the full checks look
        self.assertEqual(self.both_ways(document), [])

    def test_each_field_made_odd_is_refused_alike(self):
        base = json.loads(json.dumps(self.well_formed()))
        refused = tried = 0
        for number, result in enumerate(base["results"]):
            for path in self.places(result):
                for value in self.ODD_VALUES + ("remove",):
                    document = copy.deepcopy(base)
                    holder = document["results"][number]
                    for key in path[:-1]:
                        holder = holder[key]
                    if value == "remove":
                        if isinstance(holder, list):
                            continue
                        del holder[path[-1]]
                    else:
                        holder[path[-1]] = copy.deepcopy(value)
                    with self.subTest(result=number, path=path, value=value):
                        tried += 1
                        refused += bool(self.both_ways(document))
        # Not vacuous: most of these make a malformed file, some do not (a text for a text).
        self.assertGreater(tried, 2000)
        self.assertGreater(refused, tried // 3)

    def test_odd_results_and_repeats_are_refused_alike(self):
        base = json.loads(json.dumps(self.well_formed()))
        for odd in (None, [], "result", 3, {}, {"case": "x"}, {"status": "pass"}):
            document = copy.deepcopy(base)
            document["results"].insert(1, odd)
            self.assertTrue(self.both_ways(document), odd)
        document = copy.deepcopy(base)
        document["results"].append(copy.deepcopy(document["results"][0]))
        self.assertIn("the same case, backend, kernel and device as results[0]", self.both_ways(document)[-1])

    def test_an_integer_too_large_for_a_float_is_named_not_raised(self):
        document = json.loads(json.dumps(self.well_formed()))
        document["results"][0]["line"] = 10 ** 400
        with self.assertRaisesRegex(ResultsError, r"line: not a number: 1000.*\(too large for a double\)"):
            results_from_data(document, "f.json")

    def test_results_handed_over_one_by_one_end_as_the_whole_file_is_refused(self):
        document = json.loads(json.dumps(self.well_formed()))
        document["results"][3]["status"] = "passed"
        expected = self.checked(copy.deepcopy(document), False)[0]
        run, results = kcs_results.checked_results(document, "f.json")
        seen = []
        with self.assertRaises(ResultsError) as raised:
            for result in results:
                seen.append(result["case"])
        self.assertEqual(seen, [r["case"] for r in document["results"][:3]])  # none from the first wrong one on
        self.assertEqual(str(raised.exception).splitlines()[1:], [f"  f.json: {item}" for item in expected])


class MalformedInputTests(Scratch):
    """Bad results files: exit 2 and a message naming the file, where and what; never a traceback."""

    def refused(self, text_or_doc, *expected):
        path = (self.write_text("bad.json", text_or_doc) if isinstance(text_or_doc, str)
                else self.write("bad.json", text_or_doc))
        status, out, out_dir = self.report(path)
        self.assertEqual(status, 2, out)
        self.assertIn(f"kcs_report: {path}", out)
        for text in expected:
            self.assertIn(text, out)
        self.assertNotIn("Traceback", out)
        self.assertFalse(os.path.exists(os.path.join(out_dir, "index.html")), "a page from a malformed file")
        return out

    def test_deep_nesting_is_refused_before_parsing(self):
        depth = 200000  # far beyond Python's recursion limit: json.loads itself would raise RecursionError
        out = self.refused("[" * depth + "]" * depth, "bad.json:1:65: JSON nested deeper than 64 levels")
        self.assertNotIn("RecursionError", out)
        doc = fx.document([fx.CUDA], [fx.result("sumsq/f64-n7", fx.CUDA, "k")])
        text = json.dumps(doc, indent=1).replace('"params": {}', '"params": ' + "[" * 70 + "]" * 70)
        self.refused(text, "JSON nested deeper than 64 levels")

    def test_brackets_in_strings_do_not_count_as_nesting(self):
        doc = fx.document([fx.CUDA], [fx.result("sumsq/f64-n7", fx.CUDA, "k", message="[" * 500 + '\\"{' * 100)])
        status, out, _ = self.report(self.write("ok.json", doc))
        self.assertEqual(status, 0, out)

    def test_unknown_status_is_refused_not_dropped(self):
        doc = fx.document([fx.CUDA], [fx.result("sumsq/f64-n7", fx.CUDA, "k"),
                                      fx.result("sumsq/f64-n93", fx.CUDA, "k")])
        doc["results"][1]["status"] = "passed"
        self.refused(doc, "results[1] (case 'sumsq/f64-n93' on cuda:0): status: 'passed' is not one of pass, fail, "
                          "error, skip")

    def test_non_numeric_timings_are_refused(self):
        doc = fx.document([fx.CUDA], [fx.result("sumsq/f64-n7", fx.CUDA, "k", median=1e-3),
                                      fx.result("sumsq/f64-n93", fx.CUDA, "k", median=1e-3,
                                                samples=fx.noisy_samples(1e-3, 1, count=20))])
        doc["results"][0]["timing"]["kernel"]["median_s"] = "fast"
        doc["results"][1]["timing"]["kernel"]["samples_s"][3] = "1 ms"
        doc["results"][1]["timing"]["end_to_end"]["lower_quartile_s"] = -1.0
        doc["results"][1]["timing"]["kernel"]["back_to_back"] = "yes"
        self.refused(doc, "results[0] (case 'sumsq/f64-n7' on cuda:0): timing.kernel: median_s: not a number: 'fast'",
                     "results[1] (case 'sumsq/f64-n93' on cuda:0): timing.kernel.samples_s[3]: not a number: '1 ms'",
                     "timing.end_to_end: lower_quartile_s: a time cannot be negative",
                     "timing.kernel.back_to_back: not true or false: 'yes'",
                     "malformed results file (4 problems)")

    def test_missing_required_fields_are_refused(self):
        doc = fx.document([fx.CUDA], [fx.result("sumsq/f64-n7", fx.CUDA, "k", median=1e-3),
                                      fx.result("sumsq/f64-n93", fx.CUDA, "k"),
                                      fx.result("sumsq/f64-n4096", fx.CUDA, "k")])
        del doc["results"][0]["timing"]["kernel"]
        del doc["results"][1]["status"]
        del doc["results"][2]["case"]
        del doc["devices"][0]["id"]
        self.refused(doc, "results[0] (case 'sumsq/f64-n7' on cuda:0): timing.kernel: missing",
                     "results[1] (case 'sumsq/f64-n93' on cuda:0): status: missing",
                     "results[2]: case: missing", "devices[0]: id: missing")

    def test_results_that_are_not_objects_and_duplicates_are_refused(self):
        doc = fx.document([fx.CUDA], [fx.result("sumsq/f64-n7", fx.CUDA, "k"),
                                      fx.result("sumsq/f64-n7", fx.CUDA, "k")])
        doc["results"].append(42)
        self.refused(doc, "results[2]: not an object: 42",
                     "results[1] (case 'sumsq/f64-n7' on cuda:0): the same case, backend, kernel and device as "
                     "results[0]")

    def test_an_expectation_without_a_reason_is_refused(self):
        entry = fx.expect(fx.result("sumsq/f64-n7", fx.CUDA, "k", "fail"), "fail", "driver bug")
        entry["expected"]["reason"] = " "
        self.refused(fx.document([fx.CUDA], [entry]), "expected.reason: missing or empty")
        entry["expected"].update(reason="driver bug", met=True, outcome="skip")
        self.refused(fx.document([fx.CUDA], [entry]), "expected.met is true, but the status 'fail' does not meet "
                                                      "the expected 'skip'")

    def test_not_json_and_missing_files(self):
        status, out, _ = self.report(os.path.join(self.dir, "missing.json"))
        self.assertEqual(status, 2)
        self.assertIn("missing.json: cannot read", out)
        self.refused({"schema": "x"}, "not a kcs results file")
        self.refused("{not json", "not valid JSON")
        self.assertNotIn("Expecting value", self.refused("", "bad.json: empty file: not a results file"))
        self.refused(" \n", "empty file (only white space)")
        path = os.path.join(self.dir, "latin1.json")
        with open(path, "wb") as handle:
            handle.write(b'{"schema": "kcs-results", "x": "\xe9"}')
        status, out, _ = self.report(path)
        self.assertEqual(status, 2, out)
        self.assertIn("not UTF-8", out)

    def test_malformed_histograms_and_labels_are_refused(self):
        entries = [fx.result(f"sumsq/f64-n{n}", fx.CUDA, "k") for n in (1, 2, 3, 4)]
        entries[0]["accuracy"]["fraction_histogram"] = {"log2_upper": [-1, 0], "counts": [1], "above": 0}
        entries[1]["accuracy"]["fraction_histogram"] = {"log2_upper": [0, -1], "counts": [1, -2], "above": 0}
        entries[2]["accuracy"]["fraction_histogram"] = {"log2_upper": [-1, 0], "counts": [1, 1], "above": "none"}
        entries[3]["bound_tight"] = ""
        entries[3]["kernel_library"] = 7
        self.refused(fx.document([fx.CUDA], entries),
                     "results[0] (case 'sumsq/f64-n1' on cuda:0): accuracy: fraction_histogram.counts: not a list of "
                     "2 counts (one per log2_upper)",
                     "fraction_histogram.log2_upper: not rising numbers: [0, -1]",
                     "fraction_histogram.counts: not counts: [1, -2]",
                     "fraction_histogram.above: not a count: 'none'",
                     "results[3] (case 'sumsq/f64-n4' on cuda:0): bound_tight: not a text: ''",
                     "kernel_library: not a text: 7")

    def test_a_malformed_baseline_is_refused_too(self):
        doc = copy.deepcopy(self.new)
        doc["results"][0]["status"] = "PASS"
        status, out, _ = self.report(self.write("new.json", self.new), baseline=self.write("base.json", doc))
        self.assertEqual(status, 2, out)
        self.assertIn("base.json: malformed results file", out)


class StatsTests(unittest.TestCase):
    def test_rank_test_matches_published_values(self):
        # scipy.stats.mannwhitneyu 1.10 (method="exact" and "asymptotic" with continuity correction).
        self.assertAlmostEqual(rank_sum_test([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])[1], 2 / 252)
        self.assertEqual(rank_sum_test([1, 2, 3], [4, 5, 6]), (0.0, 0.1))
        first = [0.13, -0.21, 1.02, 0.47, -0.75, 0.31, 0.05, -1.3, 0.66, 0.2, -0.4, 0.9]
        second = [1.61, 0.62, 0.93, 1.8, 0.41, 1.12, 2.0, 0.77, 1.36, -0.1, 1.5, 0.85, 1.05, 0.3, 1.9]
        u, p = rank_sum_test(first, second)
        self.assertEqual(u, 25.0)
        self.assertAlmostEqual(p, 0.000934429982754118, places=15)
        ties_first = [1, 1, 2, 2, 2, 3, 3, 4, 5, 5] * 10
        ties_second = [2, 3, 3, 3, 4, 4, 5, 5, 6, 6] * 10
        u, p = rank_sum_test(ties_first, ties_second)
        self.assertEqual(u, 2550.0)
        self.assertAlmostEqual(p, 1.068012926996648e-09, delta=1e-20)
        self.assertEqual(rank_sum_test([1, 1, 1], [1, 1])[1], 1.0)

    def test_quantiles_as_the_runner_computes_them(self):
        self.assertEqual(quantile([1.0, 2.0, 3.0, 4.0], 0.25), 1.75)
        self.assertEqual(quantile([1.0, 2.0, 3.0, 4.0], 0.5), 2.5)
        self.assertEqual(quantile([5.0], 0.75), 5.0)
        timing = fx.figures([4.0, 1.0, 3.0, 2.0])
        self.assertEqual((timing["lower_quartile_s"], timing["median_s"]), (1.75, 2.5))


class ClassificationTests(unittest.TestCase):
    def kernel(self, median, spread, repeats=10):
        return {"repeats": repeats, "median_s": median, "lower_quartile_s": median * (1 - spread),
                "upper_quartile_s": median * (1 + spread)}

    def sampled(self, median, seed, count=200, jitter=0.015):
        return fx.figures(fx.noisy_samples(median, seed, count=count, jitter=jitter, tail=0.05))

    def test_correctness_reads_expectations(self):
        self.assertEqual(classify_correctness("pass", "fail"), "regressed")
        self.assertEqual(classify_correctness("pass", "error"), "regressed")
        self.assertEqual(classify_correctness("pass", "xfail"), "expected")
        self.assertEqual(classify_correctness("pass", "xerror"), "expected")
        self.assertEqual(classify_correctness("xpass", "fail"), "regressed")
        self.assertEqual(classify_correctness("error", "pass"), "fixed")
        self.assertEqual(classify_correctness("xfail", "xpass"), "fixed")
        self.assertEqual(classify_correctness("fail", "error"), "unchanged")
        self.assertEqual(classify_correctness("fail", "xfail"), "unchanged")
        self.assertEqual(classify_correctness("pass", "skip"), "unchanged")

    def test_speed_from_quartiles(self):
        old = self.kernel(1.0, 0.01)
        self.assertEqual(classify_speed(old, self.kernel(3.0, 0.01))[0], "slower")
        self.assertEqual(classify_speed(old, self.kernel(0.5, 0.01))[0], "faster")
        self.assertEqual(classify_speed(old, self.kernel(1.0, 0.01))[0], "same")
        self.assertEqual(classify_speed(old, self.kernel(1.04, 0.01))[0], "same")       # within the minimum effect
        self.assertEqual(classify_speed(old, self.kernel(1.10, 0.01))[0], "slower")
        # Beyond the minimum effect but within the noise the runs show: cannot tell.
        speed = classify_speed(self.kernel(1.0, 0.15), self.kernel(1.2, 0.15))
        self.assertEqual(speed[0], "unclear")
        self.assertIn("within the noise", speed[2])
        self.assertAlmostEqual(speed.noise, 0.3)
        # Beyond both, but the interquartile ranges still overlap (a skewed spread): cannot tell.
        skewed = {"repeats": 10, "median_s": 1.12, "lower_quartile_s": 1.005, "upper_quartile_s": 1.125}
        speed = classify_speed(self.kernel(1.0, 0.01), skewed)
        self.assertEqual(speed[0], "unclear")
        self.assertIn("interquartile ranges overlap", speed[2])
        self.assertEqual(classify_speed(self.kernel(1.0, 0.01, 2), self.kernel(3.0, 0.01, 2))[0], "unclear")
        self.assertIn("no quartiles", classify_speed({"repeats": 10, "median_s": 1.0},
                                                     {"repeats": 10, "median_s": 2.0})[2])
        self.assertEqual(classify_speed(None, old)[0], "untimed")
        self.assertEqual(classify_speed(old, self.kernel(1.4, 0.01), Options(min_effect=0.5))[0], "same")

    def test_speed_from_repeats_uses_the_rank_test(self):
        old = self.sampled(1e-3, 1)
        speed = classify_speed(old, self.sampled(1.1e-3, 2))
        self.assertEqual(speed[0], "slower")
        # With enough repeats for blocks, the test is of the block medians: all five of one side
        # beyond all five of the other is the smallest p there is, 2 / C(10, 5).
        self.assertAlmostEqual(speed.p, 2 / 252)
        self.assertIn("every block median slower", speed[2])
        self.assertEqual(classify_speed(old, self.sampled(1e-3, 3))[0], "same")
        self.assertEqual(classify_speed(old, self.sampled(0.85e-3, 4))[0], "faster")
        # Ten percent apart, six repeats a side of a noisy kernel: the test cannot show it.
        few_old = fx.figures([1.00, 1.09, 0.97, 1.12, 0.95, 1.02])
        few_new = fx.figures([1.10, 1.00, 1.21, 1.13, 1.07, 1.16])
        speed = classify_speed(few_old, few_new)
        self.assertEqual(speed[0], "unclear")
        self.assertIn("does not show it", speed[2])
        self.assertEqual(classify_speed(few_old, few_new, Options(significance=0.5))[0], "slower")

    def test_drift_within_a_run_is_noise_not_a_change(self):
        # Repeats a millisecond apart are not independent: a run whose kernel drifted from 1.00 to
        # 1.12 ms while it was timed (a neighbour's load, a clock; median 1.06) against a rerun
        # steady at 1.14 ms, 7.5% slower. The repeats alone would call that slower at p < 1e-15;
        # the drift of the baseline's block medians (9%) says runs differ that much by themselves.
        drifting = fx.figures([1e-3 * (1.0 + 0.12 * i / 199) for i in range(200)])
        steady = self.sampled(1.14e-3, 5, jitter=0.002)
        speed = classify_speed(drifting, steady)
        self.assertEqual(speed[0], "unclear", speed[2])
        self.assertIn("drift of the block medians", speed[2])
        # The same change in two steady runs is a change.
        self.assertEqual(classify_speed(self.sampled(1.0e-3, 6, jitter=0.002), steady)[0], "slower")

    def test_a_pace_that_changed_means_the_machine_did(self):
        # Measured on the 2-core host: with other work on the core, a 160^3 GEMM took 1.75x its
        # CPU time and the 48^3 pace 1.5 to 1.7x, in every block of the run. Steady runs, so only
        # the pace can tell that from a kernel 75% slower.
        quiet, busy = self.sampled(2.4e-3, 7, jitter=0.002), self.sampled(4.2e-3, 8, jitter=0.002)
        quiet["pace_median_s"], busy["pace_median_s"] = 60e-6, 95e-6
        speed = classify_speed(quiet, busy)
        self.assertEqual(speed[0], "unclear", speed[2])
        self.assertIn("pace", speed[2])
        self.assertIn("58% slower too", speed[2])
        # The same change with the pace where it was: the kernel changed.
        busy["pace_median_s"] = 61e-6
        self.assertEqual(classify_speed(quiet, busy)[0], "slower")
        # A pace on one side only says nothing about the other: the usual rule.
        del busy["pace_median_s"]
        self.assertEqual(classify_speed(quiet, busy)[0], "slower")

    def test_options_are_checked(self):
        for options in (Options(min_effect=-0.1), Options(min_effect=1.5), Options(significance=0),
                        Options(min_repeats=0), Options(ceiling_change=0)):
            with self.assertRaises(CompareError):
                options.check()


def only(entries, side, kind):
    """The 'what' of the one-side entries of a comparison of this side and kind."""
    return [e["what"] for e in entries if e["side"] == side and e["kind"] == kind]


class ComparisonTests(Scratch):
    """The verdicts a driver or GPU validation relies on."""

    def comparison(self, old, new, **options):
        return Comparison(results_from_data(json.loads(json.dumps(old)), "base.json", "base.json"),
                          [results_from_data(json.loads(json.dumps(new)), "new.json", "new.json")],
                          Options(**options))

    def test_identical_reruns_on_another_machine_are_not_slower(self):
        base = fx.timed_suite(seed=0)
        for seed in range(1, 6):
            rerun = fx.rerun(base, seed, fx.between_machines, hostname="ci-gpu-2")
            for keep_repeats in (True, False):
                old, new = copy.deepcopy(base), copy.deepcopy(rerun)
                if not keep_repeats:
                    fx.strip_samples(old), fx.strip_samples(new)
                comparison = self.comparison(old, new)
                changed = [(row["key"], row["ratio"], row["reason"]) for row in comparison.rows
                           if row["speed"] in ("slower", "faster")]
                self.assertEqual(changed, [], f"seed {seed}, repeats kept: {keep_repeats}")
                self.assertEqual(comparison.verdict()[0], 0)
                self.assertEqual(comparison.count("speed", "same") + comparison.count("speed", "unclear"), 32)
        status, out, _ = self.compare(base, fx.rerun(base, 1, fx.between_machines))
        self.assertEqual(status, 0, out)
        self.assertIn("verdict: no regression in 32 compared", out)

    def test_planted_ten_percent_slowdown_of_a_millisecond_kernel_is_slower_exit_4(self):
        base = fx.timed_suite(seed=0)
        rerun = fx.rerun(base, 3, fx.between_machines)
        planted = [e for e in rerun["results"]
                   if e["device"] == "cuda:0" and e["timing"]["kernel"]["median_s"] >= 9e-4]
        for entry in planted:
            fx.slow_down(entry, 1.10)
        for keep_repeats in (True, False):
            old, new = copy.deepcopy(base), copy.deepcopy(rerun)
            if not keep_repeats:
                fx.strip_samples(old), fx.strip_samples(new)
            comparison = self.comparison(old, new)
            slower = sorted(row["key"][0] for row in comparison.rows if row["speed"] == "slower")
            self.assertEqual(slower, sorted(e["case"] for e in planted), f"repeats kept: {keep_repeats}")
            self.assertEqual(comparison.count("speed", "faster"), 0)
        status, out, index = self.compare(base, rerun)
        self.assertEqual(status, 4, out)
        self.assertIn("SLOWER: sumsq/t4 [cuda cub-reduce on cuda:0 NVIDIA H100 80GB HBM3]: kernel median ×1.1", out)
        self.assertIn("verdict: SLOWER: 4 of 32 compared got slower, nothing broke", out)
        self.assertIn("; exit 4", out.splitlines()[-2])
        self.assertIn('<span class="badge slower">slower</span>', self.section(index, "comparison"))

    def test_injected_failure_exits_3_whatever_the_speed(self):
        base = fx.timed_suite(seed=0)
        new = fx.rerun(base, 1)
        entry = timed_entry(new, "sumsq/t5", "opencl:1")
        entry.update(fx.result("sumsq/t5", fx.NVIDIA_OPENCL, "workgroup-tree", "fail", n=1000, line=entry["line"],
                               message="planted failure"))
        fx.slow_down(timed_entry(new, "sumsq/t6", "cuda:0"), 1.5)
        new["summary"] = fx.runner_summary(new["results"])
        status, out, index = self.compare(base, new)
        self.assertEqual(status, 3, out)
        self.assertIn("REGRESSED: sumsq/t5 [opencl workgroup-tree on opencl:1 NVIDIA H100 80GB HBM3]: pass -> fail "
                      "(planted failure)", out)
        self.assertIn("verdict: REGRESSED: 1 pass(es) now fail or error, and 1 slower", out)
        self.assertIn('<span class="badge regressed">regressed</span>', self.section(index, "comparison"))

    def renamed(self):
        """A baseline, and a rerun whose NVIDIA OpenCL device is now "... (rev 2)" and fails a case."""
        base = fx.timed_suite(seed=0)
        new = fx.rerun(base, 1)
        for device in new["devices"]:
            if device["id"] == "opencl:1":
                device["name"] += " (rev 2)"
        entry = timed_entry(new, "sumsq/t5", "opencl:1")
        entry.update(fx.result("sumsq/t5", fx.NVIDIA_OPENCL, "workgroup-tree", "fail", n=1000, line=entry["line"],
                               message="planted failure"))
        new["summary"] = fx.runner_summary(new["results"])
        return base, new

    def test_renamed_device_without_map_is_named_and_validated_nothing_exit_2(self):
        base, new = self.renamed()
        comparison = self.comparison(base, new)
        self.assertEqual(only(comparison.one_side, "baseline", "device"),
                         ["device opencl:1 NVIDIA H100 80GB HBM3 (opencl): nothing matched it"])
        self.assertEqual(only(comparison.one_side, "new", "device"),
                         ["device opencl:1 NVIDIA H100 80GB HBM3 (rev 2) (opencl, new.json): nothing matched it"])
        # The other three devices matched and nothing regressed on them, but the renamed card's 8
        # results (its planted failure among them) were compared with nothing: no verdict on it.
        status, out, index = self.compare(base, new)
        self.assertEqual(status, 2, out)
        self.assertIn("verdict: NOT VALIDATED: 16 result(s) that ran were compared with nothing; nothing matched "
                      "device(s) opencl:1 NVIDIA H100 80GB HBM3 (baseline), opencl:1 NVIDIA H100 80GB HBM3 (rev 2) "
                      "(new.json) (each is listed above: --map OLD=NEW pairs devices, --allow-unmatched accepts the "
                      "rest); no regression in 24 compared", out)
        self.assertIn("; exit 2", out.splitlines()[-2])
        self.assertIn('<p class="verdict bad">verdict: NOT VALIDATED', index)
        # Told that the card may go unvalidated, the comparison judges what matched, and says what it left.
        status, out, index = self.compare(base, new, extra=["--allow-unmatched"])
        self.assertEqual(status, 0, out)  # the failure is not compared; the warnings say so
        self.assertIn("16 result(s) not validated, allowed by --allow-unmatched", out.splitlines()[-2])
        self.assertIn("WARNING (device): nothing in new.json matched baseline device opencl:1 NVIDIA H100 80GB HBM3 "
                      "(opencl, driver 550.54.15): its 8 result(s) were compared with nothing; if opencl:1 NVIDIA H100 "
                      "80GB HBM3 (rev 2) of new.json is that card: --map 'opencl:1=opencl:1'", out)
        self.assertIn("WARNING (device): nothing in the baseline matched device opencl:1 NVIDIA H100 80GB HBM3 "
                      "(rev 2)", out)
        self.assertIn("ONLY IN THE BASELINE: device opencl:1 NVIDIA H100 80GB HBM3 (opencl): nothing matched it "
                      "(8 results): not validated", out)
        self.assertIn("2 device(s) matched nothing", out.splitlines()[-2])
        self.assertIn("nothing matched", self.section(index, "comparison-devices"))
        self.assertIn('<p class="verdict warn">verdict: no regression in 24 compared', index)
        self.assertIn("NVIDIA H100 80GB HBM3 (rev 2)", self.section(index, "comparison-one-side"))

    def test_renamed_device_with_map_finds_the_failure(self):
        base, new = self.renamed()
        for mapping in ("opencl:1=opencl:1", "NVIDIA H100 80GB HBM3=NVIDIA H100 80GB HBM3 (rev 2)"):
            status, out, index = self.compare(base, new, extra=["--map", mapping])
            self.assertEqual(status, 3, out)
            self.assertIn("REGRESSED: sumsq/t5 [opencl workgroup-tree on opencl:1 NVIDIA H100 80GB HBM3 (rev 2)]",
                          out)
            self.assertNotIn("matched nothing", out)
            self.assertIn("opencl:1→opencl:1 by --map", out)

    def test_devices_are_matched_by_uuid_then_by_index(self):
        # Two identical cards whose order changed between the runs: the uuid follows the card.
        first = fx.device("cuda:0", "NVIDIA H100", "CUDA", "550", "12.4", 85e9, details="uuid=GPU-aaa")
        second = fx.device("cuda:1", "NVIDIA H100", "CUDA", "550", "12.4", 85e9, details="uuid=GPU-bbb")
        old = fx.document([first, second], [fx.result("sumsq/f64-n7", first, "k"),
                                            fx.result("sumsq/f64-n7", second, "k", "fail", message="card B is bad")])
        swapped = [dict(first, id="cuda:1", index=1), dict(second, id="cuda:0", index=0)]
        new = fx.document(swapped, [fx.result("sumsq/f64-n7", swapped[0], "k"),
                                    fx.result("sumsq/f64-n7", swapped[1], "k", "fail", message="card B is bad")])
        comparison = self.comparison(old, new)
        self.assertEqual([(p.old["id"], p.new["id"], p.how) for p in comparison.pairs],
                         [("cuda:0", "cuda:1", "uuid"), ("cuda:1", "cuda:0", "uuid")])
        self.assertEqual(comparison.count("correctness", "unchanged"), 2)
        # Without uuids the same files pair by index: card A's pass against card B's failure.
        for doc in (old, new):
            for device in doc["devices"]:
                device["details"] = ""
        comparison = self.comparison(old, new)
        self.assertEqual([p.how for p in comparison.pairs], ["backend, index and name"] * 2)
        self.assertEqual(comparison.count("correctness", "regressed"), 1)
        # Another card in the same slot: matched by index, and said.
        old["devices"][0]["details"], new["devices"][1]["details"] = "uuid=GPU-aaa", "uuid=GPU-ccc"
        comparison = self.comparison(old, new)
        self.assertIn("another card of the same model: uuid GPU-aaa in the baseline, GPU-ccc in new.json",
                      " ".join(text for _, text in comparison.warnings))

    def test_bad_maps_exit_2(self):
        base, new = self.renamed()
        for mapping, message in (("opencl:1", "give OLD=NEW"), ("cuda:9=cuda:0", "no device of the baseline"),
                                 ("cuda:0=cuda:9", "no device of new.json has the id or name 'cuda:9'"),
                                 ("cuda:0=opencl:1", "is a cuda device")):
            status, out, _ = self.compare(base, new, extra=["--map", mapping])
            self.assertEqual(status, 2, mapping + ": " + out)
            self.assertIn(message, out)
        status, out, _ = self.report(self.write("new.json", new), extra=["--map", "a=b"])
        self.assertEqual((status, "--map needs --baseline" in out), (2, True), out)
        for option in (["--min-effect", "-0.1"], ["--significance", "2"], ["--min-effect", "lots"]):
            status, out, _ = self.compare(base, new, extra=option)
            self.assertEqual(status, 2, out)

    def test_nothing_matched_exits_2(self):
        base = fx.timed_suite(seed=0, devices=[fx.CUDA])
        other = dict(fx.CUDA, name="NVIDIA B200", details="")
        new = fx.timed_suite(seed=1, devices=[other])
        status, out, _ = self.compare(base, new)
        self.assertEqual(status, 2, out)
        self.assertIn("verdict: NOTHING COMPARED", out)
        self.assertIn("ONLY IN THE NEW RESULTS: device cuda:0 NVIDIA B200 (cuda, new.json): nothing matched it", out)

    def test_a_loaded_machine_warns_and_judges_no_speed(self):
        # The copy ceiling measured 31.0 GB/s on the idle machine and 16.6 GB/s on the loaded one.
        host = fx.device("opencl:0", "cpu-znver4", "Portable Computing Language", "5.0", "OpenCL 3.0", 8e9,
                         ceilings={"copy_bytes_per_s": 31.0e9, "fma_flops_per_s": 2e11})
        old = fx.timed_suite(seed=0, devices=[host])
        new = fx.rerun(old, 1)
        new["devices"][0]["ceilings"] = {"copy_bytes_per_s": 16.6e9, "fma_flops_per_s": 2e11}
        for entry, factor in zip(new["results"], (1.44, 1.5, 1.6, 1.75, 1.44, 1.5, 1.6, 1.75)):
            fx.slow_down(entry, factor)
        status, out, index = self.compare(old, new)
        self.assertEqual(status, 0, out)
        self.assertIn("WARNING (ceilings): opencl:0 cpu-znver4 (baseline) and opencl:0 (new.json): the measured "
                      "ceilings differ by more than the minimum effect (5%): copy bandwidth 31 GB/s → 16.6 GB/s "
                      "(×0.535)", out)
        self.assertIn("0 slower, 0 faster, 0 same, 8 unclear", out)
        self.assertIn("not judged: the device&#39;s ceilings differ between the runs",
                      self.section(index, "comparison"))
        self.assertIn("copy bandwidth 31 GB/s → 16.6 GB/s", self.section(index, "comparison-warnings", "</ul>"))
        # The same slowdowns with the ceilings unchanged: slower.
        new["devices"][0]["ceilings"] = {"copy_bytes_per_s": 30.0e9, "fma_flops_per_s": 2e11}
        status, out, _ = self.compare(old, new)
        self.assertEqual(status, 4, out)
        self.assertNotIn("WARNING (ceilings)", out)
        # Kernels timed with a pace on both sides: the pace, timed all along their repeats, decides
        # for them, not a ceiling measured once before them (which still warns).
        new["devices"][0]["ceilings"] = {"copy_bytes_per_s": 16.6e9, "fma_flops_per_s": 2e11}
        for side, pace in ((old, 60e-6), (new, 61e-6)):
            for entry in side["results"]:
                entry["timing"]["kernel"]["pace_median_s"] = pace
        status, out, _ = self.compare(old, new)
        self.assertEqual(status, 4, out)
        self.assertIn("WARNING (ceilings)", out)
        self.assertIn("8 slower", out)

    def test_differences_in_build_and_drivers_are_warnings(self):
        old = fx.timed_suite(seed=0, devices=[fx.CUDA])
        new = fx.rerun(old, 1)
        new["comparability"]["cflags"] = "-O3 -march=native"
        del new["comparability"]["cuda_arch"]
        new["devices"][0]["driver_version"] = "560.28.03"
        status, out, index = self.compare(old, new)
        self.assertEqual(status, 0, out)
        self.assertIn("WARNING (build): cflags differs: '-O2 -std=c11 -ffp-contract=off' in the baseline, "
                      "'-O3 -march=native' in new.json", out)
        self.assertIn("WARNING (driver): cuda:0 NVIDIA H100 80GB HBM3 (baseline) and cuda:0 (new.json): driver "
                      "550.54.15 → 560.28.03", out)
        self.assertNotIn("cuda_arch differs", out)  # unknown on one side: shown, not a difference
        build = self.section(index, "comparison-build")
        self.assertIn(">unknown</span>", build)
        self.assertIn('class="over"><code>-O3 -march=native</code>', build)
        del old["comparability"], new["comparability"]
        status, out, _ = self.compare(old, new)
        self.assertIn('base.json, new.json record(s) no "comparability"', out)

    def test_a_baseline_timed_one_at_a_time_before_kcs_recorded_it_is_named(self):
        old = fx.timed_suite(seed=0, devices=[fx.CUDA])
        new = fx.rerun(old, 1)
        new["comparability"]["kernel_repeats"] = "back to back where the backend can queue them"
        for entry in new["results"]:
            entry["timing"]["kernel"]["back_to_back"] = True
        status, out, _ = self.compare(old, new)
        self.assertIn("WARNING (build): kernel_repeats differs: 'one at a time (not recorded: kcs timed so before "
                      "it recorded how)' in the baseline, 'back to back where the backend can queue them' in "
                      "new.json", out)
        old["comparability"]["kernel_repeats"] = "back to back where the backend can queue them"
        status, out, _ = self.compare(old, new)
        self.assertNotIn("kernel_repeats differs", out)  # recorded alike: no warning
        del old["comparability"]["kernel_repeats"], new["comparability"]["kernel_repeats"]
        status, out, _ = self.compare(old, new)
        self.assertNotIn("kernel_repeats differs", out)  # the new side records back_to_back: not inferred

    def test_one_side_items_and_pass_to_skip_are_named(self):
        old = fx.timed_suite(seed=0, devices=[fx.REFERENCE, fx.CUDA])
        new = fx.rerun(old, 1)
        new["results"] = [e for e in new["results"] if e["case"] != "sumsq/t7"]              # a case gone
        new["results"].append(fx.result("sumsq/t9", fx.CUDA, "cub-reduce", line=30))       # a case added
        new["results"].append(fx.result("sumsq/t1", fx.CUDA, "warp-shuffle", line=11))      # a kernel added
        new["results"] = [e for e in new["results"] if (e["case"], e["device"]) != ("sumsq/t2", "cuda:0")]
        skipped = timed_entry(new, "sumsq/t3", "reference:0")
        skipped.update(status="skip", message="tagged large, and --skip-large was given")
        del skipped["timing"], skipped["accuracy"]
        new["summary"] = fx.runner_summary(new["results"])
        comparison = self.comparison(old, new)
        self.assertEqual(only(comparison.one_side, "baseline", "case"), ["case sumsq/t7"])
        self.assertEqual(only(comparison.one_side, "new", "case"), ["case sumsq/t9"])
        self.assertEqual(only(comparison.one_side, "new", "kernel"),
                         ["kernel warp-shuffle (cuda on cuda:0 NVIDIA H100 80GB HBM3)"])
        self.assertEqual(only(comparison.one_side, "baseline", "result"),
                         ["sumsq/t2 [cuda cub-reduce on cuda:0 NVIDIA H100 80GB HBM3]"])
        # What the baseline checked and the new run did not (a case and a result gone, a pass now
        # skipped): 4 results not validated. A case or kernel only the new run has is no loss.
        self.assertEqual([(gap["kind"], len(gap["results"])) for gap in comparison.unvalidated],
                         [("case", 2), ("result", 1), ("skipped", 1)])
        status, out, index = self.compare(old, new)
        self.assertEqual(status, 2, out)
        for line in ("ONLY IN THE BASELINE: case sumsq/t7 (2 results): not validated\n",
                     "ONLY IN THE NEW RESULTS: case sumsq/t9 (1 result)\n",
                     "ONLY IN THE NEW RESULTS: kernel warp-shuffle (cuda on cuda:0 NVIDIA H100 80GB HBM3) (1 result)\n",
                     "ONLY IN THE BASELINE: sumsq/t2 [cuda cub-reduce on cuda:0 NVIDIA H100 80GB HBM3]: not validated\n",
                     "NOW SKIPPED: sumsq/t3 [reference blocked-pairwise on reference:0 host x86_64 (96 cores)]: "
                     "pass -> skip (tagged large, and --skip-large was given)",
                     "verdict: NOT VALIDATED: 3 result(s) that ran were compared with nothing; 1 result(s) that ran "
                     "in the baseline are skipped now (each is listed above"):
            self.assertIn(line, out)
        status, out, _ = self.compare(old, new, extra=["--allow-unmatched"])
        self.assertEqual(status, 0, out)
        self.assertIn("[5 result(s) on one side only; 4 result(s) not validated, allowed by --allow-unmatched]", out)
        self.assertIn("sumsq/t7", self.section(index, "comparison-one-side"))
        self.assertIn("tagged large", self.section(index, "comparison-skipped"))

    def test_what_counts_as_not_validated(self):
        # Each loss alone turns a clean comparison (exit 0) into exit 2 naming it; each addition, and
        # each skip that validated nothing in the baseline either or that an expectation gives a
        # reason for, leaves it at 0 (docs/comparing.md, "Exit status").
        old = fx.timed_suite(seed=0, devices=[fx.REFERENCE, fx.CUDA])
        old["results"].append(fx.result("sumsq/t8", fx.CUDA, "cub-reduce", "skip", line=29,
                                        message="tagged large, and --skip-large was given"))
        old["summary"] = fx.runner_summary(old["results"])
        self.assertEqual(self.compare(old, fx.rerun(old, 1))[0], 0)

        def changed(edit, extra=()):
            new = fx.rerun(old, 1)
            edit(new)
            new["summary"] = fx.runner_summary(new["results"])
            return self.compare(old, new, extra=extra)

        def lose_card(new):        # the new run lost the CUDA card
            new["devices"] = [d for d in new["devices"] if d["id"] != "cuda:0"]
            new["results"] = [e for e in new["results"] if e["device"] != "cuda:0"]

        def add_card(new):         # a second card that the baseline does not have
            card = dict(fx.CUDA, id="cuda:1", index=1, details="uuid=GPU-ffff")
            new["devices"].append(card)
            new["results"].append(fx.result("sumsq/t1", card, "cub-reduce", line=11))

        def plain_skip(new):       # a pass now skipped, with no expectation saying why
            timed_entry(new, "sumsq/t1", "cuda:0").update(status="skip", message="no device memory left",
                                                         timing=None, accuracy=None)

        def failure_gone(new):     # a baseline failure the new run does not have at all
            new["results"] = [e for e in new["results"] if (e["case"], e["device"]) != ("sumsq/t2", "cuda:0")]

        for name, edit, named in (
                ("lost card", lose_card, "nothing matched device(s) cuda:0 NVIDIA H100 80GB HBM3 (baseline)"),
                ("new card", add_card, "nothing matched device(s) cuda:1 NVIDIA H100 80GB HBM3 (new.json)"),
                ("plain skip", plain_skip, "1 result(s) that ran in the baseline are skipped now"),
                ("result gone", failure_gone, "1 result(s) that ran were compared with nothing")):
            status, out, _ = changed(edit)
            self.assertEqual(status, 2, f"{name}: {out}")
            self.assertIn(named, out.splitlines()[-2], name)
            status, out, _ = changed(edit, ["--allow-unmatched"])
            self.assertEqual(status, 0, f"{name}, --allow-unmatched: {out}")

        def expected_skip(new):    # a pass now skipped as an expectation says, with its reason
            entry = timed_entry(new, "sumsq/t1", "cuda:0")
            entry.update(status="skip", message="no FP64 on this driver", timing=None, accuracy=None)
            fx.expect(entry, "skip", "driver 560 hides FP64 (nvbug 4712)")

        def case_added(new):       # a case the baseline's suite did not have
            new["results"].append(fx.result("sumsq/t9", fx.CUDA, "cub-reduce", line=30))

        def kernel_added(new):     # a kernel row the baseline's suite did not have
            new["results"].append(fx.result("sumsq/t1", fx.CUDA, "warp-shuffle", line=11))

        def skip_gone(new):        # the baseline's skip, now not run at all: it validated nothing
            new["results"] = [e for e in new["results"] if e["case"] != "sumsq/t8"]

        for name, edit in (("expected skip", expected_skip), ("case added", case_added),
                           ("kernel added", kernel_added), ("baseline skip gone", skip_gone)):
            status, out, _ = changed(edit)
            self.assertEqual(status, 0, f"{name}: {out}")
            self.assertNotIn("not validated", out, name)

    def test_a_regression_is_exit_3_even_beside_what_was_not_validated(self):
        base, new = self.renamed()
        new["results"] = [e for e in new["results"] if e["case"] != "sumsq/t7"]
        entry = timed_entry(new, "sumsq/t5", "cuda:0")
        entry.update(fx.result("sumsq/t5", fx.CUDA, "cub-reduce", "fail", n=1000, line=entry["line"],
                               message="planted failure"))
        new["summary"] = fx.runner_summary(new["results"])
        status, out, _ = self.compare(base, new)
        self.assertEqual(status, 3, out)
        self.assertIn("verdict: REGRESSED: 1 pass(es) now fail or error", out)
        self.assertIn("18 result(s) not validated", out.splitlines()[-2])

    def test_an_expected_failure_is_not_a_regression(self):
        old = fx.timed_suite(seed=0, devices=[fx.CUDA])
        new = fx.rerun(old, 1)
        entry = timed_entry(new, "sumsq/t3", "cuda:0")
        entry.update(fx.result("sumsq/t3", fx.CUDA, "cub-reduce", "fail", n=1000, line=entry["line"],
                               message="sum differs"))
        del entry["timing"]
        fx.expect(entry, "fail", "driver 560 drops the last block (nvbug 4711)", "expectations/h100.txt:7")
        new["summary"] = fx.runner_summary(new["results"])
        status, out, index = self.compare(old, new)
        self.assertEqual(status, 0, out)
        self.assertIn("EXPECTED: sumsq/t3 [cuda cub-reduce on cuda:0 NVIDIA H100 80GB HBM3]: pass -> xfail (expected: "
                      "driver 560 drops the last block (nvbug 4711), expectations/h100.txt:7)", out)
        self.assertIn("0 regressed, 1 expected", out)
        self.assertIn("driver 560 drops the last block (nvbug 4711)", self.section(index, "comparison"))
        # The same failure without the expectation is a regression.
        del entry["expected"]
        new["summary"] = fx.runner_summary(new["results"])
        status, out, _ = self.compare(old, new)
        self.assertEqual(status, 3, out)


class ExpectationTests(Scratch):
    """The report counts as the runner counts (harness/results.c), and shows each expectation's reason."""

    def run_with_expectations(self):
        """A run whose runner summary is 2 passed, 6 failed, 0 skipped, 3 errors, 2 expected, 2 unexpected
        passes (counted by hand below, and by fx.runner_summary)."""
        dev = fx.CUDA
        results = [fx.result("sumsq/a", dev, "k"),                                              # passed
                   fx.expect(fx.result("sumsq/b", dev, "k", "fail", message="sum differs"), "fail",
                             "driver bug 1234: the tail block is dropped", "tests/h100.txt:4"),  # passed, expected
                   fx.expect(fx.result("sumsq/c", dev, "k", "error", message="illegal address"), "fail",
                             "driver bug 99", "tests/h100.txt:5"),  # passed, expected
                   fx.expect(fx.result("sumsq/d", dev, "k"), "fail", "fixed in 560?", "tests/h100.txt:6"),
                   fx.expect(fx.result("sumsq/e", dev, "k"), "error", "stale", "tests/h100.txt:7")]   # 2 xpass
        results += [fx.result(f"sumsq/f{i}", dev, "k", "fail", message="wrong") for i in range(3)]
        results += [fx.expect(fx.result("sumsq/g", dev, "k", "fail", message="wrong"), "skip", "no fp64",
                              "tests/h100.txt:8")]                                                   # failed, unmet
        results += [fx.result(f"sumsq/h{i}", dev, "k", "error", message="build failed") for i in range(3)]
        doc = fx.document([dev], results)
        results[3]["expected"].pop("unexpected_pass")  # as an older runner writes it: only the message says so
        self.assertEqual(doc["summary"], {"passed": 3, "failed": 6, "skipped": 0, "errors": 3, "expected": 2,
                                          "unexpected_passes": 2})
        return doc

    def test_counts_equal_the_runners_summary(self):
        doc = self.run_with_expectations()
        run = results_from_data(json.loads(json.dumps(doc)))
        self.assertEqual(run.counts(), doc["summary"])
        self.assertEqual(run.summary_mismatches(), [])
        status, out, out_dir = self.report(self.write("run.json", doc))
        self.assertEqual(status, 0, out)
        self.assertIn("run.json: 3 passed, 6 failed, 0 skipped, 3 errors; 2 expected failures or skips (counted as "
                      "passed or skipped), 2 unexpected passes (counted as failed)", out)
        index = self.read(os.path.join(out_dir, "index.html"))
        self.assertIn('<span class="num">3</span>passed', index)
        self.assertIn('<span class="num">6</span>failed', index)
        expected = self.section(index, "expected")
        self.assertIn("driver bug 1234: the tail block is dropped", expected)
        self.assertIn("tests/h100.txt:4", expected)
        self.assertIn('<span class="badge xfail"', expected)
        self.assertIn('<span class="badge xerror"', expected)
        failures = self.section(index, "failures")
        self.assertIn("unexpected pass</span>", failures)
        self.assertNotIn("driver bug 1234", failures)

    def test_a_summary_that_disagrees_is_warned_about(self):
        doc = self.run_with_expectations()
        doc["summary"]["passed"] = 2
        status, out, out_dir = self.report(self.write("run.json", doc))
        self.assertIn("WARNING: run.json: passed: the file's summary says 2, its results count 3", out)
        self.assertIn("passed: the file&#39;s summary says 2", self.read(os.path.join(out_dir, "index.html")))

    def test_op_page_shows_the_reason(self):
        doc = fx.document([fx.CUDA], [fx.expect(fx.result("sumsq/f64-n93", fx.CUDA, "k", "fail", message="off"),
                                                "fail", "driver bug 1234", "tests/h100.txt:4")])
        status, out, out_dir = self.report(self.write("run.json", doc))
        page = self.read(os.path.join(out_dir, "sumsq.html"))
        block = page[page.index('id="case-f64-n93"'):]
        self.assertIn("expected fail (tests/h100.txt:4): driver bug 1234", block)
        self.assertIn('<span class="badge xfail"', block)


class ReportTests(Scratch):
    def test_devices_compared_with_each_other_are_shown(self):
        doc = copy.deepcopy(self.new)
        doc["agreement"] = [
            {"case": "sumsq/f64-n93", "kernel": "vector-grid", "identity": "cuda | H100 | 580 | 13.0",
             "devices": ["cuda:0", "cuda:1", "cuda:2"], "verdict": "disagree",
             "differing": [{"device": "cuda:2", "outputs": "sum", "peer": "cuda:0", "majority": True,
                            "rerun": "reproduced", "peer_reproduced": True,
                            "first_difference": {"output": "c_out", "index": 17, "coordinates": [3, 2],
                                                 "dtype": "f32", "value": "0.203313962", "bits": "0x3e503189",
                                                 "peer_value": "0.203313947", "peer_bits": "0x3e503188"}}]},
            {"case": "sumsq/f64-n94", "kernel": "vector-grid", "identity": "cuda | H100 | 580 | 13.0",
             "devices": ["cuda:0", "cuda:1"], "verdict": "agree"}]
        doc["odd_one_out"] = [{"case": "gemm/f32-33x65x17", "backend": "opencl", "device": "opencl:1",
                               "kernel": "tiled", "others": 3, "reason": "alone fails where 3 others pass"}]
        doc["stragglers"] = [{"case": "gemm/f32-4096", "kernel": "tiled", "device": "cuda:1", "median_s": 0.0031,
                              "peer_median_s": 0.0028, "ratio": 1.107, "threshold": 1.1, "peers": ["cuda:0"]}]
        status, out, out_dir = self.report(self.write("compared.json", doc))
        index = self.read(os.path.join(out_dir, "index.html"))
        section = index[index.index('id="agreement-section"'):index.index('id="matrix-section"')]
        self.assertIn("1 case-kernel group agreed, 1 disagreed, 0 not compared", section)
        self.assertIn("<strong>cuda:2</strong>", section)
        self.assertIn("c_out[17] (3, 2) f32: cuda:0 has 0.203313947 (0x3e503188), cuda:2 has 0.203313962 "
                      "(0x3e503189); reproduced on a rerun", section)
        self.assertIn("<strong>opencl:1</strong>", section)
        self.assertIn("alone fails where 3 others pass", section)
        self.assertIn("<strong>cuda:1</strong>", section)
        self.assertIn("1.107", section)
        status, out, out_dir = self.report(self.write("old.json", self.new), output="old")
        index = self.read(os.path.join(out_dir, "index.html"))
        self.assertIn("record no comparison of devices", index)

    def assert_self_contained(self, text, name):
        self.assertNotIn("http://", text, name)
        self.assertNotIn("https://", text, name)
        self.assertNotRegex(text, r"<link\b", name)
        self.assertNotRegex(text, r"<script\b", name)
        self.assertNotRegex(text, r"<iframe\b|<object\b|<embed\b", name)
        self.assertNotRegex(text, r"@import|url\((?!#)", name)  # url(#id): a reference inside an inline SVG
        parser = Images()
        parser.feed(text)
        for tag, attribute, value in parser.attributes:
            if attribute != "href":
                self.assertTrue(value.startswith("data:image/png;base64,"), f"{name}: {tag} {attribute}={value[:40]}")
        for source in parser.sources:
            self.assertIsNone(browser_check.check_image_source(source), name)
        return parser.sources

    def test_results_of_no_device_are_a_line_not_a_device(self):
        doc = copy.deepcopy(self.new)
        for n in range(3):  # cases skipped before any device ran them, as --skip-large records them
            doc["results"].append({"case": f"sumsq/f64-never-run-{n}", "file": "cases/sumsq.md", "line": 400 + n,
                                   "status": "skip", "message": "tagged large and --skip-large was given",
                                   "backend": None, "device": None, "kernel": None, "op": "sumsq", "dtype": "f64",
                                   "sizes": {}, "params": {}, "tags": ["large"], "expected_from": None,
                                   "bytes": 0, "flops": 0})
        status, out, out_dir = self.report(self.write("new.json", doc))
        index = self.read(os.path.join(out_dir, "index.html"))
        self.assertNotIn("found before any device ran", index)
        summary = self.section(index, "summary")
        self.assertNotIn("no device</div>", summary)  # no row of the per-device table for them
        note = index[index.index('id="case-level"'):]
        note = note[:note.index("</p>")]
        self.assertIn("4 results of cases that no device ran (1 errors, 3 skipped)", note)
        self.assertIn("tagged large and --skip-large was given (3)", note)
        matrix = self.section(index, "matrix-section", end="</section>")
        self.assertNotIn("sumsq/f64-never-run-", matrix)  # a case no device ran is in no row

    def test_nothing_found_among_compared_devices_is_one_line_not_empty_tables(self):
        doc = copy.deepcopy(self.new)
        doc["agreement"], doc["odd_one_out"], doc["stragglers"] = [], [], []
        status, out, out_dir = self.report(self.write("new.json", doc))
        index = self.read(os.path.join(out_dir, "index.html"))
        section = self.section(index, "agreement-section", end="</section>")
        self.assertNotIn("<table", section)
        self.assertIn("No identical devices disagreed; no result was the odd one out among its case&#39;s others; "
                      "no straggler among identical devices.", section)
        doc["stragglers"] = [{"case": "gemm/f32-4096", "kernel": "tiled", "device": "cuda:1", "median_s": 0.0031,
                              "peer_median_s": 0.0028, "ratio": 1.107, "threshold": 1.1, "peers": ["cuda:0"]}]
        status, out, out_dir = self.report(self.write("one.json", doc), output="one")
        section = self.section(self.read(os.path.join(out_dir, "index.html")), "agreement-section", end="</section>")
        self.assertEqual(section.count("<table"), 1)
        self.assertIn('id="stragglers"', section)
        self.assertIn("No identical devices disagreed; no result was the odd one out", section)

    def test_op_pages_only_for_case_files_with_results_and_build_facts_never_blank(self):
        with open(os.path.join(self.cases, "softmax.md"), "w", encoding="utf-8") as handle:
            handle.write("# Softmax\n\nNo results here.\n")
        doc = fx.document([fx.REFERENCE], [fx.result("sumsq/f64-n93", fx.REFERENCE, "k", n=93)])
        doc["comparability"] = {"compiler": "12.2.0", "cflags": "-O2 -g", "cuda_arch": "90",
                                "opencl_build_options": ""}
        status, out, out_dir = self.report(self.write("new.json", doc), baseline=self.write("base.json", doc))
        self.assertEqual(status, 0, out)
        self.assertTrue(os.path.isfile(os.path.join(out_dir, "sumsq.html")))
        self.assertFalse(os.path.exists(os.path.join(out_dir, "softmax.html")))
        index = self.read(os.path.join(out_dir, "index.html"))
        self.assertNotIn('href="softmax.html"', index)
        self.assertIn('href="sumsq.html"', index)
        build = self.section(index, "comparison-build")
        row = build[build.index("<th>opencl_build_options</th>"):]
        row = row[:row.index("</tr>")]
        self.assertNotIn("<code></code>", build)
        self.assertEqual(row.count(">none</span>"), 2, row)

    def test_report_is_self_contained_with_valid_png_images(self):
        status, out, out_dir = self.report(self.write("new.json", self.new))
        self.assertEqual(status, 0, out)
        self.assertEqual(out.strip().splitlines()[-1], os.path.join(out_dir, "index.html"))
        index = self.read(os.path.join(out_dir, "index.html"))
        images = self.assert_self_contained(index, "index.html")
        for source in images:
            data = base64.b64decode(source.split(",", 1)[1], validate=True)
            width, height = browser_check.png_dimensions(data)
            self.assertGreater(width * height, 0)
        # One roofline per device that timed something, inline: reference, POCL, NVIDIA OpenCL, CUDA.
        self.assertEqual(index.count('<svg class="roofline"'), 4)
        op_page = self.read(os.path.join(out_dir, "sumsq.html"))
        self.assert_self_contained(op_page, "sumsq.html")
        problems, _ = browser_check.check_dom(index, "index.html", browser_check.KEY_TABLES, probed=False)
        self.assertEqual(problems, [])

    def test_index_tables_and_failures(self):
        status, out, out_dir = self.report(self.write("new.json", self.new))
        index = self.read(os.path.join(out_dir, "index.html"))
        for ident in ("runs", "devices", "summary", "failures", "matrix"):
            self.assertIn(f'id="{ident}"', index)
        self.assertIn("NVIDIA H100 80GB HBM3", index)
        self.assertIn("550.54.15", index)
        self.assertIn("OpenCL 3.0 PoCL 5.0+debian", index)
        # The failure with its message (escaped) and its worst element.
        self.assertIn("&lt;kernel&gt;:41:5: error: use of undeclared identifier &#39;tail&#39;", index)
        self.assertIn("a dropped element?", index)
        self.assertIn("<code>30.7711</code>", index)
        self.assertIn("<code>31.61245</code>", index)
        # Ceilings: present on the NVIDIA devices, absent on the CPUs; units that scale.
        self.assertIn("of copy</div>", index)
        self.assertIn("no ceiling measured", index)
        self.assertIn("TB/s", index)
        self.assertNotIn("flop/s", index)

    def test_a_saved_failure_shows_its_replay_command(self):
        entry = fx.result("sumsq/f64-n93", fx.REFERENCE, "k", "fail", n=93, message="outside the bound")
        entry["saved"] = {"case_folder": "kcs-failures/sumsq/f64-n93", "outputs_folder": None,
                          "replay": "build/kcs apply sumsq --dtype f64 --size n=93 --backend reference"}
        doc = fx.document([fx.REFERENCE], [entry])
        status, out, out_dir = self.report(self.write("new.json", doc))
        index = self.read(os.path.join(out_dir, "index.html"))
        failures = self.section(index, "failures")
        self.assertIn("<code>build/kcs apply sumsq --dtype f64 --size n=93 --backend reference</code>", failures)
        self.assertIn("<code>kcs-failures/sumsq/f64-n93</code>", failures)
        self.assertNotIn("outputs:", failures)  # a hang or crash wrote none

    def test_a_failure_shows_what_explains_it(self):
        entry = fx.result("sumsq/f64-n93", fx.REFERENCE, "k", "fail", n=93, message="outside the bound")
        entry["explanation"] = {"text": "consistent with: sumsq-accumulates-in-f32, the running sum kept in f32 "
                                        "(0.31 of its bound); no other of the 3 models tried fits",
                                "verdict": "consistent", "models_tried": 3, "elements": 1,
                                "indistinguishable": False, "models": []}
        doc = fx.document([fx.REFERENCE], [entry])
        status, out, out_dir = self.report(self.write("new.json", doc))
        self.assertEqual(status, 0, out)
        failures = self.section(self.read(os.path.join(out_dir, "index.html")), "failures")
        self.assertIn("<strong>explained:</strong> consistent with: sumsq-accumulates-in-f32", failures)
        entry["explanation"] = "not an object"
        status, out, _ = self.report(self.write("bad.json", fx.document([fx.REFERENCE], [entry])))
        self.assertEqual(status, 2, out)
        self.assertIn("explanation: not an object with a text", out)

    def test_no_ceilings_anywhere_says_so(self):
        doc = fx.document([fx.REFERENCE], [fx.result("sumsq/f64-n1000003", fx.REFERENCE, "k", n=1000003,
                                                     median=1e-3)])
        status, out, out_dir = self.report(self.write("new.json", doc))
        index = self.read(os.path.join(out_dir, "index.html"))
        self.assertIn("not measured on this device: copy bandwidth, FMA rate, f32 GEMM rate", index)
        self.assertIn("copy not measured", self.section(index, "peers"))
        self.assertNotIn('id="matrix"', index)  # one device: no matrix
        self.assertIn('id="failures"', index)   # the table is there, saying there are none
        self.assertIn("No failures or errors.", index)

    def test_gemm_is_measured_against_the_gemm_ceiling(self):
        doc = fx.document([fx.CUDA], [fx.result("gemm/f32-256", fx.CUDA, "cublas", n=65536, median=2e-5, op="gemm"),
                                      fx.result("gemm/f32-1024", fx.CUDA, "cublas", n=10 ** 6, median=4e-5,
                                                op="gemm")])
        status, out, out_dir = self.report(self.write("new.json", doc))
        self.assertEqual(status, 0, out)
        index = self.read(os.path.join(out_dir, "index.html"))
        self.assertIn("held to the f32 GEMM rate", index)
        self.assertIn(f"{2 * 65536 / 2e-5 / 4.9e14:.3g} of f32 GEMM", index)
        self.assertTrue(os.path.isfile(os.path.join(out_dir, "gemm.html")))  # no case file: still a page
        self.assertIn("No case file", self.read(os.path.join(out_dir, "gemm.html")))

    def peers_of(self, index, case):
        """The rows of the peers table for one case."""
        part = self.section(index, "peers")
        part = part[part.index(f"<code>{case}</code>"):]
        return part[:part.index("</tbody>")]

    def test_each_result_is_held_to_the_ceiling_its_file_names(self):
        # The reference device measured no ceiling at all: whatever fraction is shown comes from the file.
        gemm = fx.result("gemm/f32-1024", fx.REFERENCE, "blocked", n=10 ** 6, median=4e-3, op="gemm")
        sumsq = fx.result("sumsq/f64-n1000003", fx.REFERENCE, "k", n=1000003, median=1e-3)
        gemm["timing"]["ceiling"].update(ceiling_per_s=1e9, fraction=0.777)
        sumsq["timing"]["ceiling"].update(ceiling_per_s=1e10, fraction=0.333)
        self.assertEqual((gemm["timing"]["ceiling"]["kind"], sumsq["timing"]["ceiling"]["kind"]), ("gemm", "copy"))
        status, out, out_dir = self.report(self.write("new.json", fx.document([fx.REFERENCE], [gemm, sumsq])))
        self.assertEqual(status, 0, out)
        index = self.read(os.path.join(out_dir, "index.html"))
        gemm_part, sumsq_part = self.peers_of(index, "gemm/f32-1024"), self.peers_of(index, "sumsq/f64-n1000003")
        self.assertIn("held to the f32 GEMM rate", gemm_part)
        self.assertIn("0.777 of f32 GEMM", gemm_part)
        self.assertIn("held to the copy bandwidth", sumsq_part)
        self.assertIn("0.333 of copy", sumsq_part)
        self.assertIn("0.777 of f32 GEMM rate", index)  # the roofline's tooltip says the same
        self.assertNotIn("0.777 of copy", index)

    def test_a_16_bit_gemm_is_held_to_its_own_mode_and_every_mode_ceiling_is_listed(self):
        # The runner files an f16 GEMM under the f16 GEMM rate (harness/speed.c); the report shows
        # that fraction, names that ceiling, and lists every mode's rate the device measured.
        gemm = fx.result("gemm/f16-4096", fx.CUDA, "tiled", n=10 ** 6, median=4e-3, op="gemm")
        gemm["timing"]["ceiling"].update(kind="gemm-f16", ceiling_key="gemm_f16_flops_per_s",
                                         ceiling_per_s=6.93e14, fraction=0.0625)
        doc = fx.document([fx.CUDA], [gemm])
        doc["devices"][0]["ceilings"].update(gemm_f16_flops_per_s=6.93e14, gemm_fp8_e4m3_flops_per_s=1.031e15)
        status, out, out_dir = self.report(self.write("new.json", doc))
        self.assertEqual(status, 0, out)
        index = self.read(os.path.join(out_dir, "index.html"))
        part = self.peers_of(index, "gemm/f16-4096")
        self.assertIn("held to the f16 GEMM rate", part)
        self.assertIn("0.0625 of f16 GEMM", part)
        self.assertNotIn("of f32 GEMM", part)
        devices = self.section(index, "devices")
        self.assertIn("f16 GEMM rate", devices)
        self.assertIn("FP8 e4m3 GEMM rate", devices)

    def test_version_1_results_show_no_fraction(self):
        doc = copy.deepcopy(self.new)
        doc["version"] = 1
        for entry in doc["results"]:
            (entry.get("timing") or {}).pop("ceiling", None)
        status, out, out_dir = self.report(self.write("old.json", doc))
        self.assertEqual(status, 0, out)
        index = self.read(os.path.join(out_dir, "index.html"))
        sumsq_part = self.peers_of(index, "sumsq/f64-n1000003")
        self.assertIn("not recorded", sumsq_part)
        self.assertNotIn("of copy</div>", index)  # not guessed from the device's ceilings
        self.assertNotIn("· held to the", index)
        self.assertIn("schema version 1: no fractions of ceilings", index)

    def test_op_page_is_woven_from_the_case_file(self):
        status, out, out_dir = self.report(self.write("new.json", self.new))
        page = self.read(os.path.join(out_dir, "sumsq.html"))
        self.assertIn("Sum of squares &lt;for tests&gt;", page)
        self.assertIn("<code>x &lt; y &amp;&amp; z</code>", page)
        self.assertIn("a &lt;b&gt;tag&lt;/b&gt; &amp; an ampersand", page)
        self.assertIn("snake_case_name", page)
        self.assertIn('href="../docs/sumsq.md"', page)  # relative to the output directory
        self.assertIn('id="case-f64-n93"', page)
        self.assertIn('id="case-f64-n1000003"', page)
        self.assertNotIn("```kcs-case", page)
        # The failing case's table, and the case without results.
        block = page[page.index('id="case-f64-n93"'):page.index('id="case-f64-n1000003"')]
        self.assertIn('<span class="badge fail">fail</span>', block)
        self.assertIn("workgroup-tree", block)
        self.assertIn("not in these results", page[page.index('id="case-f64-not-run"'):])
        self.assertIn("&lt;not a tag&gt;", page)
        # Results of cases that the file does not have are still shown.
        self.assertIn("Results for cases not in the case file", page)
        self.assertIn('id="case-f32-n4096"', page)

    def test_op_page_fields_are_the_runners_not_the_blocks_text(self):
        """A block's facts are the runner's reading of it (kcs list --json), found by the fence's
        line: a list that says n=94 shows n=94 over a block that says n=93."""
        self.case_fields = {"sumsq.md": [dict(CASE_FIELDS[0], sizes={"n": 94}), *CASE_FIELDS[1:]]}
        status, out, out_dir = self.report(self.write("new.json", self.new))
        self.assertEqual(status, 0, out)
        page = self.read(os.path.join(out_dir, "sumsq.html"))
        block = page[page.index('id="case-f64-n93"'):page.index('id="case-f64-n1000003"')]
        self.assertIn('<span class="facts">f64 · n=94 · x: uniform lo=-1 hi=1 · expect golden</span>', block)
        perf = page[page.index('id="case-f64-n1000003"'):page.index('id="case-f64-not-run"')]
        self.assertIn('<span class="tag">perf</span>', perf)

    def test_a_block_the_runner_refuses_shows_why(self):
        """A key given twice: the runner's parser refuses the block (where the report's own parser
        once took the first value), lists no case there and names the problem; the page shows the
        block without a name, with the runner's reason, and the report warns."""
        with open(os.path.join(self.cases, "sumsq.md"), "a", encoding="utf-8") as handle:
            handle.write("\n```kcs-case\ncase: f64-twice\nop: sumsq\ndtype: f64\nsizes: n=5\nsizes: n=6\n"
                         "input x: normal\nexpect: golden\n```\n")
        line = len(CASE_FILE.splitlines()) + 7  # the second sizes line
        self.case_problems = [{"file": "sumsq.md", "line": line, "case": "sumsq/f64-twice",
                               "message": "key 'sizes' given twice"}]
        status, out, out_dir = self.report(self.write("new.json", self.new))
        self.assertEqual(status, 0, out)
        self.assertIn(f"WARNING: {self.cases}/sumsq.md:{line}: key 'sizes' given twice", out)
        page = self.read(os.path.join(out_dir, "sumsq.html"))
        self.assertIn(f"not read as a case: line {line}: key &#39;sizes&#39; given twice", page)
        self.assertIn("(block without a case name)", page)
        self.assertNotIn('id="case-f64-twice"', page)

    def test_a_runner_that_cannot_list_the_cases_is_bad_input(self):
        missing = os.path.join(self.dir, "no-kcs")
        status, out, _ = self.report(self.write("new.json", self.new), extra=("--kcs", missing))
        self.assertEqual(status, 2, out)  # --case-list and --kcs: one of them
        argv = [self.write("new.json", self.new), "--cases", self.cases, "--kcs", missing,
                "--output", os.path.join(self.dir, "out")]
        stderr = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(stderr):
            self.assertEqual(kcs_report.main(argv), 2)
        self.assertIn(f"{missing}: cannot run it to list the cases", stderr.getvalue())
        broken = self.write_text("broken.json", '{"schema": "kcs-results"}')
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(stderr):
            self.assertEqual(kcs_report.main([self.write("new.json", self.new), "--case-list", broken,
                                              "--output", os.path.join(self.dir, "out")]), 2)
        self.assertIn("broken.json: not a kcs case list", stderr.getvalue())

    def test_planted_regression_exits_3(self):
        baseline = self.write("base.json", self.new)
        new = copy.deepcopy(self.new)
        broken = timed_entry(new, "sumsq/f64-n4096", "cuda:0")
        broken.update(fx.result("sumsq/f64-n4096", fx.CUDA, "cub-reduce", "fail", n=4096, fraction=40.0,
                                message="planted failure", line=broken["line"]))
        scale_timing(timed_entry(new, "sumsq/f64-n1000003", "cuda:0"), 3.0, spread=0.01)
        path = self.write("new.json", new)
        done = subprocess.run([sys.executable, SCRIPT, path, "--baseline", baseline, "--cases", self.cases,
                               "--case-list", self.write_case_list(),
                               "--output", os.path.join(self.dir, "out")], capture_output=True, text=True)
        self.assertEqual(done.returncode, 3, done.stdout + done.stderr)
        self.assertIn("1 regressed", done.stdout)
        self.assertIn("1 slower", done.stdout)
        self.assertIn("REGRESSED: sumsq/f64-n4096 [cuda cub-reduce on cuda:0 NVIDIA H100 80GB HBM3]: pass -> fail",
                      done.stdout)
        self.assertIn("SLOWER: sumsq/f64-n1000003 [cuda cub-reduce on cuda:0 NVIDIA H100 80GB HBM3]", done.stdout)
        self.assertIn("verdict: REGRESSED: 1 pass(es) now fail or error, and 1 slower", done.stdout)
        self.assertTrue(done.stdout.strip().splitlines()[-1].endswith("index.html"))
        index = self.read(os.path.join(self.dir, "out", "index.html"))
        self.assertIn('id="comparison"', index)
        table = index[index.index('id="comparison"'):]
        table = table[:table.index("</table>")]
        self.assertIn('<span class="badge regressed">regressed</span>', table)
        self.assertIn('<span class="badge slower">slower</span>', table)

    def test_unchanged_copy_exits_0_and_is_same(self):
        path = self.write("new.json", self.new)
        baseline = self.write("base.json", self.new)
        done = subprocess.run([sys.executable, SCRIPT, path, "--baseline", baseline, "--cases", self.cases,
                               "--case-list", self.write_case_list(),
                               "--output", os.path.join(self.dir, "out")], capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("0 regressed", done.stdout)
        self.assertRegex(done.stdout, r"\b2[0-9] same\b")
        self.assertIn("0 slower", done.stdout)
        index = self.read(os.path.join(self.dir, "out", "index.html"))
        self.assertIn('<span class="badge same">same</span>', index)
        self.assertIn('<p class="verdict good">verdict: no regression in', index)

    def test_fixed_and_wide_spreads(self):
        old = fx.strip_samples(copy.deepcopy(self.new))
        new = fx.strip_samples(copy.deepcopy(self.new))
        for doc in (old, new):
            entry = timed_entry(doc, "sumsq/f64-n100000000", "opencl:1")
            entry["timing"]["kernel"]["lower_quartile_s"] = entry["timing"]["kernel"]["median_s"] * 0.8
            entry["timing"]["kernel"]["upper_quartile_s"] = entry["timing"]["kernel"]["median_s"] * 1.2
        scale_timing(timed_entry(new, "sumsq/f64-n100000000", "opencl:1"), 1.3)
        before = timed_entry(old, "sumsq/f64-n4096", "cuda:0")
        before.update(fx.result("sumsq/f64-n4096", fx.CUDA, "cub-reduce", "error", n=4096,
                                message="CUDA error: an illegal memory access", line=before["line"]))
        old["summary"] = fx.runner_summary(old["results"])
        status, out, out_dir = self.report(self.write("new.json", new), baseline=self.write("base.json", old))
        self.assertEqual(status, 0, out)  # unclear and fixed do not gate
        self.assertIn("1 unclear", out)
        self.assertIn("1 fixed", out)
        self.assertIn("FIXED: sumsq/f64-n4096 [cuda cub-reduce on cuda:0 NVIDIA H100 80GB HBM3]: error -> pass", out)
        index = self.read(os.path.join(out_dir, "index.html"))
        self.assertIn('<span class="badge unclear">unclear</span><div class="wrap muted small reason">30% slower, '
                      'within the noise the runs measured (interquartile range or drift of the block medians, 40% of the '
                      'median)', index)

    def test_several_files_give_a_matrix(self):
        other = copy.deepcopy(self.new)
        other["created"] = "2026-11-27T00:00:00Z"
        for device in other["devices"]:
            if device["backend"] == "cuda":
                device["driver_version"] = "560.28.03"
        status, out, out_dir = self.report(self.write("driver-550.json", self.new),
                                           self.write("driver-560.json", other))
        self.assertEqual(status, 0, out)
        index = self.read(os.path.join(out_dir, "index.html"))
        matrix = index[index.index('id="matrix"'):]
        matrix = matrix[:matrix.index("</table>")]
        self.assertIn("cuda: NVIDIA H100 80GB HBM3 [550.54.15]", matrix)
        self.assertIn("cuda: NVIDIA H100 80GB HBM3 [560.28.03]", matrix)
        self.assertIn("driver-560.json", index)

    def test_bad_input_is_a_clear_error(self):
        status, out, _ = self.report(os.path.join(self.dir, "missing.json"))
        self.assertEqual(status, 2)
        self.assertIn("missing.json: cannot read", out)
        status, out, _ = self.report(self.write("other.json", {"schema": "x"}))
        self.assertEqual(status, 2)
        self.assertIn("not a kcs results file", out)
        with open(os.path.join(self.dir, "broken.json"), "w") as handle:
            handle.write("{not json")
        status, out, _ = self.report(os.path.join(self.dir, "broken.json"))
        self.assertEqual(status, 2)
        self.assertIn("not valid JSON", out)

    def test_help(self):
        done = subprocess.run([sys.executable, SCRIPT, "--help"], capture_output=True, text=True)
        self.assertEqual(done.returncode, 0)
        self.assertIn("--baseline", done.stdout)
        self.assertIn("--min-effect FRACTION", done.stdout)
        self.assertIn("--map OLD=NEW", done.stdout)
        for line in ("  0  report written; no regression against the baseline", "  2  bad input:",
                     "  3  a correctness regression (pass -> fail/error), whatever the speed",
                     "  4  speed only: something slower, nothing regressed"):
            self.assertIn(line, done.stdout)


class ViewTests(Scratch):
    """The views a GPU engineer reads: rooflines, peers, runs overlaid, accuracy, flags, and an index
    that fits a screen, on a whole suite run on an H100 machine (kcs_fixtures.perf_suite)."""

    @classmethod
    def setUpClass(cls):
        # Made once (a quarter of a second each); each test gets its own copy to change.
        cls.perf_suite = fx.perf_suite(seed=1)

    def setUp(self):
        super().setUp()
        self.perf = copy.deepcopy(self.perf_suite)

    def index_of(self, *docs, extra=()):
        paths = [self.write(f"run-{n}.json", doc) for n, doc in enumerate(docs)]
        status, out, out_dir = self.report(*paths, extra=extra)
        self.assertEqual(status, 0, out)
        return self.read(os.path.join(out_dir, "index.html")), out_dir

    @staticmethod
    def rooflines(index):
        """{title: svg text} of the index's rooflines."""
        found = {}
        for part in index.split('<svg class="roofline"')[1:]:
            svg = part[:part.index("</svg>")]
            label = svg[svg.index('aria-label="roofline of ') + 24:]
            found[label[:label.index('"')].rsplit(":", 1)[0]] = svg
        return found

    def test_a_roofline_per_device_with_every_timed_kernel_under_its_ceilings(self):
        index, _ = self.index_of(self.perf)
        rooflines = self.rooflines(index)
        self.assertEqual(sorted(rooflines), ["cuda: NVIDIA H100 80GB HBM3", "opencl: NVIDIA H100 80GB HBM3",
                                             "opencl: cpu-sapphirerapids-Intel Xeon Platinum 8480+",
                                             "reference: host x86_64 (52 cores)"])
        cuda = rooflines["cuda: NVIDIA H100 80GB HBM3"]
        timed = [r for r in self.perf["results"] if r["device"] == "cuda:0" and r.get("timing")]
        self.assertEqual(cuda.count("-pt-"), len(timed))
        self.assertEqual(cuda.count("<title>"), len(timed))  # each point's tooltip
        for label in ("copy 2.95 TB/s", "FMA 61 TFLOP/s", "GEMM 51 TFLOP/s", "gemm · cublas (cuBLAS)",
                      "sumsq · cub (CUB)", "softmax · warp-registers"):
            self.assertIn(label, cuda)
        # The tooltip gives the fraction of the ceiling the runner wrote, and the intensity.
        gemm = next(r for r in timed if r["case"] == "gemm/f32-4096" and r["kernel"] == "cublas")
        self.assertIn("gemm/f32-4096 · cuda cublas (cuBLAS)\n", cuda)
        self.assertIn(f"{gemm['timing']['ceiling']['fraction']:.3g} of f32 GEMM rate); "
                      f"{gemm['flops'] / gemm['bytes']:.3g} FLOP/byte", cuda)
        # The reference measured only its copy bandwidth: the others are "not measured", not missing.
        self.assertIn("not measured on this device: FMA rate, f32 GEMM rate", index)
        self.assertNotIn("not measured on this device: copy", index)

    def test_an_opencl_device_without_a_gemm_ceiling_says_not_measured(self):
        doc = fx.document([fx.NVIDIA_OPENCL], [fx.result("gemm/f32-512", fx.NVIDIA_OPENCL, "packed", n=10 ** 6,
                                                         median=1e-4, op="gemm"),
                                               fx.result("sumsq/f64-n1000003", fx.NVIDIA_OPENCL, "tree", n=10 ** 6,
                                                         median=4e-6)])
        index, _ = self.index_of(doc)
        self.assertEqual(len(self.rooflines(index)), 1)
        self.assertIn("not measured on this device: f32 GEMM rate", index)
        self.assertIn("GEMM not measured", self.section(index, "peers"))
        self.assertIn("f32 GEMM rate not measured", self.section(index, "devices"))

    def test_a_ceiling_the_run_did_not_ask_for_says_not_measured_in_this_run(self):
        # A run measures only the ceilings its timed cases are held to (docs/results.md): a sumsq
        # run has the copy bandwidth and lists the rest, which say nothing about the device.
        device = copy.deepcopy(fx.NVIDIA_OPENCL)
        device["ceilings"] = {"copy_bytes_per_s": 2.9e12, "method": "copy: clEnqueueCopyBuffer",
                              "not_measured_in_this_run": ["host_to_device_bytes_per_s", "fma_flops_per_s",
                                                           "gemm_flops_per_s"]}
        doc = fx.document([device], [fx.result("sumsq/f64-n1000003", device, "tree", n=10 ** 6, median=4e-6)])
        index, _ = self.index_of(doc)
        self.assertIn("not measured in this run (only the ceilings its timed cases are held to): "
                      "FMA rate, f32 GEMM rate", index)
        self.assertNotIn("not measured on this device", index)
        devices = self.section(index, "devices")
        self.assertIn("FMA rate not measured in this run", devices)
        self.assertIn("f32 GEMM rate not measured in this run", devices)
        self.assertNotIn("nan", devices)

    def test_peers_are_the_library_where_one_ran_else_the_fastest_variant(self):
        model = kcs_report.Model([results_from_data(copy.deepcopy(self.perf), "perf.json")])
        tables = {table["case"]: table for table in model.peers()}

        def row(case, device, kernel):
            return next(r for r in tables[case]["rows"] if r["latest"]["device"] == device
                        and r["latest"]["kernel"] == kernel)

        def median(case, device, kernel):
            return row(case, device, kernel)["speed"]["median"]

        # gemm: cuBLAS is the peer on the H100, for the CUDA kernels and the OpenCL one on the same card.
        cublas, tiled = row("gemm/f32-4096", "cuda:0", "cublas"), row("gemm/f32-4096", "cuda:0", "tiled")
        self.assertTrue(cublas["is_peer"])
        self.assertAlmostEqual(tiled["versus_peer"], median("gemm/f32-4096", "cuda:0", "cublas") /
                               median("gemm/f32-4096", "cuda:0", "tiled"))
        self.assertEqual(row("gemm/f32-4096", "opencl:1", "packed-128x128")["peer"], "cuBLAS")
        # softmax has no library: the fastest kcs variant on the card is the peer.
        softmax = [r for r in tables["softmax/f32-32768x1024"]["rows"] if r["latest"]["device"] != "opencl:0"]
        fastest = min(softmax, key=lambda r: r["speed"]["median"])
        self.assertTrue(fastest["is_peer"])
        self.assertEqual([r for r in softmax if r["is_peer"]], [fastest])
        self.assertTrue(all(r["versus_peer"] <= 1 for r in softmax))
        # POCL is a card of its own; with one variant it has no peer.
        self.assertIsNone(row("softmax/f32-32768x1024", "opencl:0", "cpu-rows")["versus_peer"])
        # Against the reference where it ran: its median over this one's.
        self.assertAlmostEqual(row("gemm/f32-512", "cuda:0", "tiled")["versus_reference"],
                               median("gemm/f32-512", "reference:0", "plain-k-order") /
                               median("gemm/f32-512", "cuda:0", "tiled"))
        self.assertIsNone(row("gemm/f32-4096", "cuda:0", "tiled")["versus_reference"])  # too slow to run there
        index, _ = self.index_of(self.perf)
        part = self.section(index, "peers")
        part = part[part.index("<code>gemm/f32-4096</code>"):]
        part = part[:part.index("</tbody>")]
        self.assertIn('<span class="badge peer">peer</span>', part)
        self.assertIn(f'{tiled["versus_peer"]:.2f}<div class="muted small wrap narrow">of cuBLAS</div>', part)
        self.assertIn("held to the f32 GEMM rate", part)

    def test_flags_end_to_end_below_kernel_and_a_rate_above_its_ceiling(self):
        index, _ = self.index_of(self.perf)
        peers = self.section(index, "peers")
        self.assertIn("end to end 46.", peers)
        self.assertIn("is below the kernel time", peers)
        self.assertIn("more than 1.1 times the ceiling it is held to", peers)  # TF32 held to the f32 GEMM rate
        self.assertEqual(self.section(index, "summary").count("1 flagged</span>"), 2)  # NVIDIA OpenCL, CUDA
        # A kernel that merely matches its ceiling is not flagged.
        doc = fx.document([fx.CUDA], [fx.result("sumsq/f64-n1000003", fx.CUDA, "k", n=10 ** 8, median=8e8 / 3.1e12)])
        doc["results"][0]["timing"]["end_to_end"]["median_s"] = doc["results"][0]["timing"]["kernel"]["median_s"] * 2
        self.assertGreater(doc["results"][0]["timing"]["ceiling"]["fraction"], 1)
        index, _ = self.index_of(doc)
        self.assertIn("<strong>Flags:</strong> none.", index)

    def test_runs_overlaid_with_a_ratio_to_the_first(self):
        later = copy.deepcopy(self.perf)
        later["created"] = "2026-11-28T00:00:00Z"
        slow = timed_entry(later, "sumsq/f64-n100000000", "cuda:0")
        slow = next(r for r in later["results"] if r["case"] == "sumsq/f64-n100000000" and r["device"] == "cuda:0"
                    and r["kernel"] == "cub")
        fx.slow_down(slow, 1.5)
        index, out_dir = self.index_of(self.perf, later)
        peers = self.section(index, "peers")
        self.assertIn('class="data peers overlay"', peers)
        self.assertIn("<th class=\"run\"><div class=\"wrap narrow\">run-0.json</div>", peers)
        self.assertIn('<div class="overlay-ratio small slower">×1.5</div>', peers)
        self.assertIn('<div class="overlay-ratio small ">×1</div>', peers)
        self.assertIn("1 kernel moved by more than 5% against run-0.json", index)
        # The roofline of each device shows both files: every kernel twice, joined.
        rooflines = self.rooflines(index)
        self.assertEqual(len(rooflines), 4)  # one per device, not per file
        cuda = next(svg for title, svg in rooflines.items() if title.startswith("cuda: NVIDIA H100 80GB HBM3"))
        timed = [r for r in self.perf["results"] if r["device"] == "cuda:0" and r.get("timing")]
        self.assertEqual(cuda.count("-pt-"), 2 * len(timed))
        self.assertIn("· run-0.json\n", cuda)
        # Accuracy overlaid too: a column per file, with the ratio to the first.
        near = self.section(index, "near-bound")
        self.assertIn("<th>run-0.json</th><th>run-1.json</th>", near)
        self.assertIn('<div class="overlay-ratio small">×1</div>', near)
        # The op page overlays its peers the same way.
        self.assertIn('<div class="overlay-ratio small slower">×1.5</div>', self.read(os.path.join(out_dir,
                                                                                                    "sumsq.html")))

    def test_the_baseline_is_the_first_of_the_overlay(self):
        later = copy.deepcopy(self.perf)
        fx.slow_down(next(r for r in later["results"] if r["case"] == "gemm/f32-4096" and r["kernel"] == "tiled"), 2.0)
        status, out, out_dir = self.report(self.write("new.json", later), baseline=self.write("base.json", self.perf))
        index = self.read(os.path.join(out_dir, "index.html"))
        peers = self.section(index, "peers")
        self.assertLess(peers.index("base.json"), peers.index("new.json"))
        self.assertIn('<div class="overlay-ratio small slower">×2</div>', peers)

    def test_accuracy_shows_the_distribution_the_worst_element_and_why_a_pass_is_near_its_bound(self):
        index, out_dir = self.index_of(self.perf)
        accuracy = self.section(index, "accuracy")
        self.assertEqual(accuracy.count('<svg class="histogram"'), 11)  # one per op
        self.assertNotIn("not recorded", accuracy)
        near = self.section(index, "near-bound")
        tight = near[near.index("<code>anneal/update-f32-1024x128</code>"):]
        self.assertIn("tight by construction", tight[:tight.index("</tr>")])
        self.assertIn("the bound is the rounding of each of the two fused steps", tight[:tight.index("</tr>")])
        accident = near[near.index("<code>gemm/f64-7</code>"):]
        accident = accident[:accident.index("</tr>")]
        self.assertIn("near the bound", accident)
        self.assertIn("0.71 of the bound used, more than 0.5, and the case file gives no reason", accident)
        self.assertNotIn("<code>gemm/f64-9</code>", near)  # an error: nothing checked
        # The op page: each case's results with their distribution and worst element.
        page = self.read(os.path.join(out_dir, "gemm.html"))
        block = page[page.index('id="case-f64-7"'):]
        block = block[:block.index("case block")]
        self.assertEqual(block.count('<svg class="histogram"'), 4)
        self.assertIn("near the bound", block)
        # A file without histograms (before the runner wrote them) says so, and still renders.
        index, _ = self.index_of(self.new)
        self.assertIn("not recorded", self.section(index, "accuracy"))

    def test_the_histogram_has_a_bar_per_bin_with_elements_and_marks_those_outside_the_bound(self):
        entry = fx.result("sumsq/f64-n93", fx.CUDA, "k", "fail", n=93, fraction=3.0)
        entry["accuracy"]["fraction_histogram"] = {"log2_upper": list(range(-20, 1)),
                                                   "counts": [90] + [0] * 19 + [1], "above": 2}
        index, _ = self.index_of(fx.document([fx.CUDA], [entry]))
        histogram = self.section(index, "accuracy")
        histogram = histogram[histogram.index('<svg class="histogram"'):]
        histogram = histogram[:histogram.index("</svg>")]
        self.assertEqual(histogram.count("<rect"), 3)
        self.assertIn("<title>≤ 2^-20: 90</title>", histogram)
        self.assertIn("<title>2^-1 – 2^0: 1</title>", histogram)
        self.assertIn('class="above"><title>above the bound: 2</title>', histogram)

    def test_an_index_that_fits_a_screen(self):
        index, _ = self.index_of(self.perf, copy.deepcopy(self.perf))
        self.assertLess(len(index.encode("utf-8")), 1_000_000)
        # Summary first, then the failures; devices and files last.
        order = [index.index(f'id="{ident}"') for ident in ("summary-section", "failures-section", "matrix-section",
                                                             "performance-section", "accuracy-section",
                                                             "devices-section", "runs-section")]
        self.assertEqual(order, sorted(order))
        # The matrix lists the exceptions only: the two cases that failed or errored, of about two hundred.
        matrix = self.section(index, "matrix")
        self.assertEqual(matrix.count("<tr><td><a href"), 2)
        self.assertIn("<code>gemm/f64-9</code>", matrix)
        self.assertIn("<code>softmax/f64-3</code>", matrix)
        self.assertRegex(index, r"1[0-9]{2} cases passed on every device that ran them and are not listed")
        # Each device once, however many files list it.
        devices = self.section(index, "devices")
        self.assertEqual(devices.count("<code>cuda:0</code>"), 1)
        self.assertIn("run-0.json, run-1.json", devices)
        # Units that scale.
        self.assertIn("TFLOP/s", index)
        self.assertNotIn("flop/s", index)

    def test_the_default_output_folder_is_in_the_current_directory_not_the_suites_report(self):
        suite_report = os.path.join(os.path.dirname(HERE), "build", "report", "index.html")
        before = os.stat(suite_report).st_mtime_ns if os.path.exists(suite_report) else None
        here = os.getcwd()
        stdout = io.StringIO()
        try:
            os.chdir(self.dir)
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stdout):
                status = kcs_report.main([self.write("new.json", self.new), "--cases", self.cases,
                                          "--case-list", self.write_case_list()])
        finally:
            os.chdir(here)
        self.assertEqual(status, 0, stdout.getvalue())
        written = os.path.join(self.dir, "kcs-report", "index.html")
        self.assertTrue(os.path.isfile(written), stdout.getvalue())
        self.assertEqual(stdout.getvalue().splitlines()[-1], os.path.join("kcs-report", "index.html"))
        after = os.stat(suite_report).st_mtime_ns if os.path.exists(suite_report) else None
        self.assertEqual(before, after, "the report of an ad-hoc run replaced the suite's build/report")


class BrowserCheckTests(unittest.TestCase):
    def test_png_checker_rejects_corruption(self):
        one_pixel = base64.b64decode(
            "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
        self.assertEqual(browser_check.png_dimensions(one_pixel), (1, 1))

        def flipped(position):
            return one_pixel[:position] + bytes([one_pixel[position] ^ 1]) + one_pixel[position + 1:]

        with self.assertRaisesRegex(ValueError, "not recognise it as a PNG"):
            browser_check.png_dimensions(flipped(20))  # in IHDR: its CRC no longer matches
        with self.assertRaisesRegex(ValueError, "checksum"):
            browser_check.png_dimensions(flipped(45))  # in IDAT
        with self.assertRaisesRegex(ValueError, "[Tt]runcated"):
            browser_check.png_dimensions(one_pixel[:-12])  # no IEND
        self.assertIn("not an embedded PNG", browser_check.check_image_source("plot.png"))

    def test_layout_measurements_are_judged(self):
        fine = {"data-kcs-wide": "", "data-kcs-width": "1280 1280", "data-kcs-rooflines": "roofline-0:634x394:12/12",
                "data-kcs-peers": "12", "data-kcs-overlay": "3"}
        self.assertEqual(browser_check.check_layout(fine, "index.html", browser_check.REQUIREMENTS), [])
        wide = dict(fine, **{"data-kcs-wide": "failures: 1299 px"})
        self.assertIn("index.html: table(s) wider than the 1280 px window or their box: failures: 1299 px",
                      browser_check.check_layout(wide, "index.html"))
        hidden = dict(fine, **{"data-kcs-rooflines": "roofline-0:634x394:11/12 roofline-1:0x0:0/0"})
        problems = browser_check.check_layout(hidden, "index.html", ["roofline"])
        self.assertIn("index.html: roofline roofline-0: 11 of its 12 points drawn inside it", problems)
        self.assertIn("index.html: roofline roofline-1 has no size (0x0)", problems)
        self.assertIn("no roofline drawn", browser_check.check_layout(dict(fine, **{"data-kcs-rooflines": ""}),
                                                                     "i", ["roofline"])[0])
        self.assertIn("no peers table", browser_check.check_layout(dict(fine, **{"data-kcs-peers": "0"}), "i",
                                                                   ["peers"])[0])
        self.assertIn("no overlay drawn", browser_check.check_layout(dict(fine, **{"data-kcs-overlay": "none"}), "i",
                                                                     ["overlay"])[0])
        self.assertEqual(browser_check.check_layout(dict(fine, **{"data-kcs-overlay": "none"}), "i", ["peers"]), [])

    def test_report_renders_in_chromium(self):
        # Not skipped without Chromium: tools/setup.sh installs it, and a check that did not run has not passed.
        self.assertTrue(browser_check.find_chromium(None), "chromium is not installed (tools/setup.sh installs it)")
        with tempfile.TemporaryDirectory(prefix="kcs-browser-test-") as scratch:
            paths = []
            for name, doc in (("old.json", fx.demo_new()), ("new.json", fx.rerun(fx.demo_new(), seed=3))):
                paths.append(os.path.join(scratch, name))
                with open(paths[-1], "w", encoding="utf-8") as handle:
                    json.dump(doc, handle, default=str)
            out_dir = os.path.join(scratch, "out")
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(kcs_report.main([*paths, "--output", out_dir]), 0)
            shot = os.path.join(scratch, "shot.png")
            done = subprocess.run([sys.executable, os.path.join(HERE, "browser_check.py"),
                                   os.path.join(out_dir, "index.html"), shot, "--require", "roofline,peers,overlay"],
                                  capture_output=True, text=True)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            self.assertIn("roofline, peers, overlay drawn, no table wider than 1280 px", done.stdout)
            with open(shot, "rb") as handle:
                self.assertEqual(browser_check.png_dimensions(handle.read()), (1280, 2000))

    def test_fails_without_chromium(self):
        with tempfile.TemporaryDirectory() as empty:
            env = dict(os.environ, PATH=empty)
            env.pop("CHROMIUM", None)
            done = subprocess.run([sys.executable, os.path.join(HERE, "browser_check.py"), "index.html",
                                   "shot.png"], capture_output=True, text=True, env=env)
        self.assertEqual(done.returncode, browser_check.EXIT_FAILED)
        self.assertIn("FAIL: chromium is not installed", done.stderr)


if __name__ == "__main__":
    unittest.main()
