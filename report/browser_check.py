#!/usr/bin/python3
"""browser_check: load the kcs report in headless Chromium and check that it renders and fits.

    /usr/bin/python3 report/browser_check.py build/report/index.html build/report/screenshot.png
        [--require roofline,peers,overlay] [--width 1280]

For index.html and every op page its navigation links to, Chromium loads the page in a window
--width pixels wide (with --dump-dom, after a small script added to a temporary copy has measured
it) and the check requires: the page finished loading (its footer is in the DOM), every <img> is a
data:image/png URI that decodes as a PNG of nonzero size and that the browser drew, no table is
wider than the window or than the box it scrolls in (every <details> opened first, so that
folded tables count too), and, on index.html, the devices, summary and failures tables. With
--require, index.html must also show what each word names, drawn by the browser:

  roofline  an <svg class="roofline"> of nonzero size whose every point (a <g id="...-pt-N">) the
            browser laid out inside it, at least one point in all;
  peers     table#peers with at least one row of a kernel;
  overlay   the peers table overlaid (class "overlay"), with a ratio to the first file drawn.

Then it saves a screenshot of index.html (--window-size, default WIDTH,2000) to the path given.

Exit status: 0 all checks passed; 1 a check failed (each failure is printed), or Chromium is not
installed (tools/setup.sh installs it): a check that could not run has not passed; 2 bad arguments.
"""

import argparse
import base64
import binascii
import html.parser
import io
import os
import shutil
import subprocess
import sys
import tempfile

from PIL import Image, UnidentifiedImageError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
KEY_TABLES = ("devices", "summary", "failures")

REQUIREMENTS = ("roofline", "peers", "overlay")

# Added to a temporary copy of each page: after the load event, record on <html> how many images
# there are and which ones the browser could not decode (complete but naturalWidth 0); then open
# every <details> and record each table wider than the window or than the box it scrolls in
# (id or position: width), each roofline (id: width x height: points laid out inside it / points),
# how many rows of kernels the peers table has and how many ratios to the first file were drawn.
PROBE = ("<script>window.addEventListener('load',function(){var b=[],m=document.images;"
         "for(var i=0;i<m.length;i++){if(!m[i].complete||m[i].naturalWidth===0)b.push(i);}"
         "var r=document.documentElement;r.setAttribute('data-kcs-images',String(m.length));"
         "r.setAttribute('data-kcs-broken',b.join(','));"
         "var d=document.querySelectorAll('details');for(i=0;i<d.length;i++)d[i].open=true;"
         "var limit=r.clientWidth,wide=[],t=document.querySelectorAll('table');"
         "for(i=0;i<t.length;i++){var box=t[i].getBoundingClientRect(),p=t[i].parentElement;"
         "if(box.right>limit+1||(p&&p.classList.contains('table-wrap')&&box.width>p.clientWidth+1))"
         "wide.push((t[i].id||('table '+(i+1)))+': '+Math.round(box.width)+' px');}"
         "r.setAttribute('data-kcs-wide',wide.join('; '));"
         "r.setAttribute('data-kcs-width',String(limit)+' '+String(r.scrollWidth));"
         "var s=document.querySelectorAll('svg.roofline'),o=[];"
         "for(i=0;i<s.length;i++){var a=s[i].getBoundingClientRect(),q=s[i].querySelectorAll('g[id*=\"-pt-\"]'),n=0;"
         "for(var j=0;j<q.length;j++){var c=q[j].getBoundingClientRect();"
         "if(c.width>0&&c.height>0&&c.left>=a.left-1&&c.right<=a.right+1&&c.top>=a.top-1&&c.bottom<=a.bottom+1)n++;}"
         "o.push(s[i].id+':'+Math.round(a.width)+'x'+Math.round(a.height)+':'+n+'/'+q.length);}"
         "r.setAttribute('data-kcs-rooflines',o.join(' '));"
         "var e=document.querySelector('table#peers');"
         "r.setAttribute('data-kcs-peers',e?String(e.querySelectorAll('tbody tr:not(.group):not(.flag-row) td').length?"
         "e.querySelectorAll('tbody tr:not(.group):not(.flag-row)').length:0):'none');"
         "r.setAttribute('data-kcs-overlay',e&&e.classList.contains('overlay')?String(Array.prototype.filter.call("
         "e.querySelectorAll('.overlay-ratio'),function(x){return x.getBoundingClientRect().width>0;}).length):'none');"
         "});</script>")


def png_dimensions(data):
    """(width, height) of a PNG that PIL opens, checks (every chunk's CRC up to IEND) and decodes;
    raises ValueError saying what is wrong otherwise."""
    try:
        with Image.open(io.BytesIO(data), formats=["PNG"]) as image:
            image.verify()  # leaves the image unusable: it is decoded from a second opening
        with Image.open(io.BytesIO(data), formats=["PNG"]) as image:
            image.load()
            return image.size
    except UnidentifiedImageError:
        raise ValueError("PIL does not recognise it as a PNG (a bad signature, header or header CRC)") from None
    except (OSError, SyntaxError, ValueError) as error:
        raise ValueError(str(error)) from error


def check_image_source(source):
    """None when source is a data:image/png;base64 URI holding a valid nonempty PNG, else why not."""
    prefix = "data:image/png;base64,"
    if not source.startswith(prefix):
        return f"not an embedded PNG: {source[:60]!r}"
    try:
        data = base64.b64decode(source[len(prefix):], validate=True)
    except (binascii.Error, ValueError) as error:
        return f"base64 does not decode: {error}"
    try:
        png_dimensions(data)
    except ValueError as error:
        return f"not a valid PNG: {error}"
    return None


class PageParser(html.parser.HTMLParser):
    """What the checks need from a page or a dumped DOM."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.images, self.tables, self.nav_links = [], set(), []
        self.root_attributes, self.generator, self.has_end = {}, None, False
        self._in_nav = 0

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "html":
            self.root_attributes = attributes
        elif tag == "img":
            self.images.append(attributes.get("src") or "")
        elif tag == "table" and attributes.get("id"):
            self.tables.add(attributes["id"])
        elif tag == "meta" and attributes.get("name") == "generator":
            self.generator = attributes.get("content")
        elif tag == "footer" and attributes.get("id") == "end":
            self.has_end = True
        elif tag == "nav":
            self._in_nav += 1
        elif tag == "a" and self._in_nav and attributes.get("href"):
            self.nav_links.append(attributes["href"])

    def handle_endtag(self, tag):
        if tag == "nav" and self._in_nav:
            self._in_nav -= 1


def parse(text):
    """A PageParser fed with text."""
    parser = PageParser()
    parser.feed(text)
    parser.close()
    return parser


def check_dom(dom, name, key_tables=(), probed=True, require=()):
    """The failures (strings) of one page's dumped DOM; require: words of REQUIREMENTS it must show."""
    page = parse(dom)
    problems = []
    if page.generator != "kcs-report":
        problems.append(f"{name}: not a kcs report page (no <meta name=generator content=kcs-report>)")
    if not page.has_end:
        problems.append(f"{name}: the page did not finish loading (no footer#end in the DOM)")
    for number, source in enumerate(page.images):
        why = check_image_source(source)
        if why:
            problems.append(f"{name}: image {number + 1}: {why}")
    if probed:
        if "data-kcs-broken" not in page.root_attributes:
            problems.append(f"{name}: the load event never ran (the probe left no mark)")
        else:
            broken = [b for b in page.root_attributes["data-kcs-broken"].split(",") if b]
            if broken:
                problems.append(f"{name}: the browser could not draw image(s) "
                                f"{', '.join(str(int(b) + 1) for b in broken)}")
            if page.root_attributes.get("data-kcs-images") != str(len(page.images)):
                problems.append(f"{name}: {page.root_attributes.get('data-kcs-images')} images loaded, "
                                f"{len(page.images)} in the DOM")
            problems += check_layout(page.root_attributes, name, require)
    for ident in key_tables:
        if ident not in page.tables:
            problems.append(f"{name}: no table#{ident}")
    return problems, page


def check_layout(measured, name, require=()):
    """The failures that the probe's measurements (attributes of <html>) show: tables too wide,
    and what require names that the browser did not draw."""
    problems = []
    if "data-kcs-wide" not in measured:
        return [f"{name}: the probe measured nothing (no data-kcs-wide)"]
    if measured["data-kcs-wide"]:
        window = measured.get("data-kcs-width", "?").split(" ")[0]
        problems.append(f"{name}: table(s) wider than the {window} px window or their box: {measured['data-kcs-wide']}")
    rooflines = [part.split(":") for part in measured.get("data-kcs-rooflines", "").split()]
    if "roofline" in require:
        if not rooflines:
            problems.append(f"{name}: no roofline drawn (no svg.roofline)")
        for ident, size, points in rooflines:
            inside, total = points.split("/")
            width, height = (int(v) for v in size.split("x"))
            if width <= 0 or height <= 0:
                problems.append(f"{name}: roofline {ident} has no size ({size})")
            if int(total) == 0 or inside != total:
                problems.append(f"{name}: roofline {ident}: {inside} of its {total} points drawn inside it")
    if "peers" in require and measured.get("data-kcs-peers") in (None, "none", "0"):
        problems.append(f"{name}: no peers table with a kernel's row (table#peers: {measured.get('data-kcs-peers')})")
    if "overlay" in require and measured.get("data-kcs-overlay") in (None, "none", "0"):
        problems.append(f"{name}: no overlay drawn (the peers table is not overlaid, or shows no ratio to the first "
                        f"file: {measured.get('data-kcs-overlay')})")
    return problems


def find_chromium(explicit):
    """The Chromium command: --chromium, $CHROMIUM, or chromium / chromium-browser on PATH."""
    for candidate in (explicit, os.environ.get("CHROMIUM"), "chromium", "chromium-browser"):
        if candidate:
            found = shutil.which(candidate)
            if found:
                return found
    return None


def run_chromium(chromium, profile, arguments, timeout):
    """(returncode, stdout, stderr) of one headless Chromium run; returncode None on a timeout."""
    command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--no-first-run", "--no-default-browser-check", f"--user-data-dir={profile}", *arguments]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "", f"timed out after {timeout} s"
    return done.returncode, done.stdout, done.stderr


def dump_page(chromium, scratch, path, timeout, width=1280):
    """The DOM of a probed copy of the page at path, after its load event, or raises RuntimeError."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    probe = os.path.join(scratch, "probe-" + os.path.basename(path))
    closing = text.rfind("</body>")
    text = text[:closing] + PROBE + text[closing:] if closing >= 0 else text + PROBE
    with open(probe, "w", encoding="utf-8") as handle:
        handle.write(text)
    code, out, err = run_chromium(chromium, os.path.join(scratch, "profile"),
                                  ["--virtual-time-budget=10000", f"--window-size={width},2000", "--dump-dom",
                                   "file://" + probe], timeout)
    if code != 0 or not out.strip():
        tail = "\n".join(err.strip().splitlines()[-5:])
        raise RuntimeError(f"{path}: chromium --dump-dom failed (status {code}): {tail}")
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="browser_check.py", description="Load a kcs report in headless Chromium, check that it renders, "
                                             "and save a screenshot.",
        epilog="Exit status: 0 passed, 1 a check failed or Chromium is not installed, 2 bad arguments.")
    parser.add_argument("index", metavar="INDEX.html", help="the report's index.html (kcs_report.py output)")
    parser.add_argument("screenshot", metavar="SCREENSHOT.png", help="where to save the screenshot of index.html")
    parser.add_argument("--chromium", help="the Chromium command (default: $CHROMIUM, chromium, chromium-browser)")
    parser.add_argument("--width", type=int, default=1280,
                        help="window width in px that every table must fit (default: 1280)")
    parser.add_argument("--require", default="",
                        help=f"comma-separated: what index.html must draw ({', '.join(REQUIREMENTS)})")
    parser.add_argument("--window-size", default=None, help="screenshot size W,H (default: WIDTH,2000)")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per Chromium run (default: 120)")
    args = parser.parse_args(argv)
    require = [word for word in args.require.split(",") if word]
    unknown = [word for word in require if word not in REQUIREMENTS]
    if unknown or args.width < 1:
        parser.error(f"--require {','.join(unknown)}: not one of {', '.join(REQUIREMENTS)}" if unknown
                     else f"--width {args.width}: give a positive width")
    window_size = args.window_size or f"{args.width},2000"

    chromium = find_chromium(args.chromium)
    if chromium is None:
        print("browser_check: FAIL: chromium is not installed, so nothing was checked (tools/setup.sh installs it; "
              "or name it with --chromium or $CHROMIUM)", file=sys.stderr)
        return EXIT_FAILED
    if not os.path.isfile(args.index):
        print(f"browser_check: FAIL: {args.index}: no such file", file=sys.stderr)
        return EXIT_FAILED
    index = os.path.abspath(args.index)
    problems = []
    with tempfile.TemporaryDirectory(prefix="kcs-browser-check-") as scratch:
        pages = [index]
        try:
            dom = dump_page(chromium, scratch, index, args.timeout, args.width)
        except RuntimeError as error:
            print(f"browser_check: FAIL: {error}", file=sys.stderr)
            return EXIT_FAILED
        found, page = check_dom(dom, os.path.basename(index), KEY_TABLES, require=require)
        problems += found
        images = len(page.images)
        for link in page.nav_links:
            target = os.path.join(os.path.dirname(index), link.split("#", 1)[0])
            if os.path.abspath(target) in pages or not link or "://" in link:
                continue
            if not os.path.isfile(target):
                problems.append(f"{os.path.basename(index)}: navigation link {link!r}: no such page")
                continue
            pages.append(os.path.abspath(target))
            try:
                found, other = check_dom(dump_page(chromium, scratch, target, args.timeout, args.width), link)
            except RuntimeError as error:
                problems.append(str(error))
                continue
            problems += found
            images += len(other.images)
        shot = os.path.abspath(args.screenshot)
        os.makedirs(os.path.dirname(shot), exist_ok=True)
        if os.path.exists(shot):
            os.remove(shot)
        code, _, err = run_chromium(chromium, os.path.join(scratch, "profile"),
                                    [f"--screenshot={shot}", f"--window-size={window_size}",
                                     "file://" + index], args.timeout)
        if code != 0 or not os.path.isfile(shot):
            problems.append(f"screenshot: chromium failed (status {code}): "
                            + " ".join(err.strip().splitlines()[-3:]))
        else:
            with open(shot, "rb") as handle:
                try:
                    width, height = png_dimensions(handle.read())
                except ValueError as error:
                    problems.append(f"screenshot {shot}: {error}")
                    width = height = 0
    if problems:
        for problem in problems:
            print(f"browser_check: FAIL: {problem}", file=sys.stderr)
        return EXIT_FAILED
    drawn = f", {', '.join(require)} drawn" if require else ""
    print(f"browser_check: OK: {len(pages)} page(s) loaded, {images} image(s) drawn, tables "
          f"{', '.join(KEY_TABLES)} present{drawn}, no table wider than {args.width} px; screenshot {shot} "
          f"({width}x{height})")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
