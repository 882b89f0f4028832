"""A small Markdown to HTML converter for the subset that kcs's case files and docs use.

Blocks: ATX headings (with ids for anchors), paragraphs, fenced code (``` and ~~~, any length,
with an info string), indented code, pipe tables with alignment, bullet and ordered lists
(nested by indentation), block quotes and thematic breaks. Inline: code spans (any number of
backticks), backslash escapes, links and autolinks, images (rendered as links, so a page never
loads a file), **strong**, *emphasis* and _emphasis_ (underscores only at word boundaries, so
identifiers like f64_n0 are left alone). Raw HTML is never passed through: every character of the
input reaches the page escaped. Link targets other than http(s), mailto, fragments and relative
paths are dropped.

A fence_hook(info, lines) may render a fenced block itself (the report replaces each
```kcs-case block with that case's results); link_hook(url) may rewrite relative links.
"""

import html
import re

_FENCE_OPEN = re.compile(r"^( {0,3})(`{3,}|~{3,})[ \t]*(.*?)[ \t]*$")
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_RULE = re.compile(r"^ {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_BULLET = re.compile(r"^( {0,3})([-*+])([ \t]+|$)(.*)$")
_ORDERED = re.compile(r"^( {0,3})(\d{1,9})([.)])([ \t]+|$)(.*)$")
_TABLE_DELIMITER = re.compile(r"^ {0,3}\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_QUOTE = re.compile(r"^ {0,3}> ?(.*)$")
_SAFE_URL = re.compile(r"^(?:https?://|mailto:|#|[^:/?#]*(?:[/?#]|$))", re.IGNORECASE)
_PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"


def escape(text):
    """HTML-escapes text for element content and double-quoted attributes."""
    return html.escape(text, quote=True)


def slugify(text):
    """An id for a heading: lower-case words joined by '-'."""
    slug = re.sub(r"[^\w\s-]", "", text.lower())
    slug = re.sub(r"[\s_]+", "-", slug).strip("-")
    return slug or "section"


class Converter:
    """Converts one document; keeps the heading ids it has used so that they stay unique."""

    def __init__(self, fence_hook=None, link_hook=None, heading_shift=0):
        self.fence_hook = fence_hook
        self.link_hook = link_hook
        self.heading_shift = heading_shift
        self.used_ids = set()
        self.headings = []  # (level, id, text) for a table of contents

    # ---- blocks ---------------------------------------------------------------------------

    def convert(self, text):
        """The HTML of a whole document."""
        text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\0", "\ufffd")
        lines = [line.expandtabs(4) for line in text.split("\n")]
        return self.blocks(lines)

    def blocks(self, lines):
        out = []
        i = 0
        while i < len(lines):
            line = lines[i]
            if not line.strip():
                i += 1
                continue
            fence = _FENCE_OPEN.match(line)
            if fence and not (fence.group(2)[0] == "`" and "`" in fence.group(3)):
                i = self.fenced(lines, i, fence, out)
                continue
            if line.startswith("    "):
                i = self.indented_code(lines, i, out)
                continue
            heading = _HEADING.match(line)
            if heading:
                self.heading(len(heading.group(1)), (heading.group(2) or "").strip(), out)
                i += 1
                continue
            if _RULE.match(line):
                out.append("<hr>")
                i += 1
                continue
            if _QUOTE.match(line):
                i = self.quote(lines, i, out)
                continue
            if _BULLET.match(line) or _ORDERED.match(line):
                i = self.list_block(lines, i, out)
                continue
            if ("|" in line and i + 1 < len(lines) and _TABLE_DELIMITER.match(lines[i + 1])
                    and "-" in lines[i + 1]):
                i = self.table(lines, i, out)
                continue
            i = self.paragraph(lines, i, out)
        return "\n".join(out)

    def fenced(self, lines, i, fence, out):
        indent, marker, info = len(fence.group(1)), fence.group(2), fence.group(3)
        body = []
        j = i + 1
        closing = re.compile(r"^ {0,3}" + re.escape(marker[0]) + "{" + str(len(marker)) + r",}[ \t]*$")
        while j < len(lines) and not closing.match(lines[j]):
            line = lines[j]
            # Content is de-indented by the fence's own indentation, as CommonMark does.
            strip = min(indent, len(line) - len(line.lstrip(" ")))
            body.append(line[strip:])
            j += 1
        rendered = self.fence_hook(info, body) if self.fence_hook else None
        if rendered is None:
            language = info.split()[0] if info.split() else ""
            attribute = f' class="language-{escape(language)}"' if language else ""
            out.append(f"<pre><code{attribute}>{escape(chr(10).join(body))}</code></pre>")
        else:
            out.append(rendered)
        return j + 1  # past the closing fence, or past the end of an unclosed block

    def indented_code(self, lines, i, out):
        body = []
        j = i
        while j < len(lines) and (lines[j].startswith("    ") or not lines[j].strip()):
            body.append(lines[j][4:])
            j += 1
        while body and not body[-1].strip():
            body.pop()
            j -= 1
        out.append(f"<pre><code>{escape(chr(10).join(body))}</code></pre>")
        return j

    def heading(self, level, text, out):
        level = min(6, level + self.heading_shift)
        plain = re.sub(r"[`*_\\]", "", text)
        ident = slugify(plain)
        base, n = ident, 2
        while ident in self.used_ids:
            ident = f"{base}-{n}"
            n += 1
        self.used_ids.add(ident)
        self.headings.append((level, ident, plain))
        out.append(f'<h{level} id="{ident}">{self.inline(text)}'
                   f'<a class="anchor" href="#{ident}" aria-hidden="true">#</a></h{level}>')

    def quote(self, lines, i, out):
        body = []
        j = i
        while j < len(lines) and lines[j].strip():
            match = _QUOTE.match(lines[j])
            body.append(match.group(1) if match else lines[j])
            j += 1
        out.append(f"<blockquote>\n{self.blocks(body)}\n</blockquote>")
        return j

    def _starts_block(self, line):
        return bool(_FENCE_OPEN.match(line) or _HEADING.match(line) or _RULE.match(line)
                    or _QUOTE.match(line) or _BULLET.match(line) or _ORDERED.match(line))

    def paragraph(self, lines, i, out):
        body = []
        j = i
        while j < len(lines) and lines[j].strip():
            if j > i and self._starts_block(lines[j]):
                break
            if (j > i and "|" in lines[j] and j + 1 < len(lines)
                    and _TABLE_DELIMITER.match(lines[j + 1]) and "-" in lines[j + 1]):
                break
            body.append(lines[j].strip())
            j += 1
        out.append(f"<p>{self.inline(chr(10).join(body))}</p>")
        return j

    def list_block(self, lines, i, out):
        first = _BULLET.match(lines[i])
        ordered = first is None
        marker = _ORDERED.match(lines[i]) if ordered else first
        start = int(marker.group(2)) if ordered else 1
        items = []  # each: list of lines (de-indented)
        loose = False
        j = i
        while j < len(lines):
            line = lines[j]
            match = _ORDERED.match(line) if ordered else _BULLET.match(line)
            nested = items and match and len(match.group(1)) >= items[-1]["width"]
            if match and not nested and (ordered or match.group(2) == first.group(2)):
                lead = len(match.group(1))
                if ordered:
                    content = match.group(5)
                    width = lead + len(match.group(2)) + 1 + max(1, min(4, len(match.group(4)) or 1))
                else:
                    content = match.group(4)
                    width = lead + 1 + max(1, min(4, len(match.group(3)) or 1))
                items.append({"lines": [content], "width": width})
                j += 1
                continue
            if not line.strip():
                # A blank line ends the list unless the next line continues this item or starts another.
                k = j + 1
                while k < len(lines) and not lines[k].strip():
                    k += 1
                if k >= len(lines):
                    break
                next_line = lines[k]
                again = _ORDERED.match(next_line) if ordered else _BULLET.match(next_line)
                indent = len(next_line) - len(next_line.lstrip(" "))
                if again and len(again.group(1)) < items[-1]["width"]:
                    loose = True
                    j = k
                    continue
                if indent >= items[-1]["width"]:
                    loose = True
                    items[-1]["lines"].extend([""] * (k - j))
                    j = k
                    continue
                break
            indent = len(line) - len(line.lstrip(" "))
            if indent >= items[-1]["width"]:
                items[-1]["lines"].append(line[items[-1]["width"]:])
            elif self._starts_block(line):
                break
            else:
                items[-1]["lines"].append(line.strip())  # lazy continuation of a paragraph
            j += 1
        tag = "ol" if ordered else "ul"
        start_attribute = f' start="{start}"' if ordered and start != 1 else ""
        parts = [f"<{tag}{start_attribute}>"]
        for item in items:
            inner = self.blocks(item["lines"])
            if not loose and inner.startswith("<p>"):
                # A tight item: its first paragraph is not wrapped.
                end = inner.find("</p>")
                inner = inner[3:end] + inner[end + 4:]
            parts.append(f"<li>{inner}</li>")
        parts.append(f"</{tag}>")
        out.append("\n".join(parts))
        return j

    def table(self, lines, i, out):
        header = split_row(lines[i])
        aligns = []
        for cell in split_row(lines[i + 1]):
            cell = cell.strip()
            if cell.startswith(":") and cell.endswith(":"):
                aligns.append("center")
            elif cell.endswith(":"):
                aligns.append("right")
            elif cell.startswith(":"):
                aligns.append("left")
            else:
                aligns.append(None)
        rows = []
        j = i + 2
        while j < len(lines) and lines[j].strip() and "|" in lines[j] and not self._starts_block(lines[j]):
            rows.append(split_row(lines[j]))
            j += 1

        def cells(row, tag):
            parts = []
            for n in range(len(header)):
                text = row[n] if n < len(row) else ""
                align = aligns[n] if n < len(aligns) else None
                style = f' style="text-align:{align}"' if align else ""
                parts.append(f"<{tag}{style}>{self.inline(text.strip())}</{tag}>")
            return "".join(parts)

        body = "\n".join(f"<tr>{cells(row, 'td')}</tr>" for row in rows)
        out.append(f'<div class="table-wrap"><table class="prose">\n<thead><tr>{cells(header, "th")}'
                   f"</tr></thead>\n<tbody>\n{body}\n</tbody></table></div>")
        return j

    # ---- inline ---------------------------------------------------------------------------

    def inline(self, text):
        """The HTML of one paragraph's (or cell's, or heading's) text."""
        held = []

        def hold(fragment):
            held.append(fragment)
            return f"\0{len(held) - 1}\0"

        out = []
        i = 0
        n = len(text)
        while i < n:
            c = text[i]
            if c == "\\" and i + 1 < n and text[i + 1] in _PUNCTUATION:
                out.append(hold(escape(text[i + 1])))
                i += 2
                continue
            if c == "`":
                run = 0
                while i + run < n and text[i + run] == "`":
                    run += 1
                close = _find_backtick_run(text, i + run, run)
                if close < 0:
                    out.append(hold(escape("`" * run)))
                    i += run
                    continue
                code = text[i + run:close].replace("\n", " ")
                if len(code) >= 2 and code[0] == " " and code[-1] == " " and code.strip():
                    code = code[1:-1]
                out.append(hold(f"<code>{escape(code)}</code>"))
                i = close + run
                continue
            if c == "<":
                match = re.match(r"<((?:https?://|mailto:)[^\s<>]+)>", text[i:], re.IGNORECASE)
                if match:
                    url = match.group(1)
                    out.append(hold(f'<a href="{escape(url)}">{escape(url)}</a>'))
                    i += match.end()
                    continue
            if c == "[" or (c == "!" and i + 1 < n and text[i + 1] == "["):
                link = self._link(text, i + (1 if c == "!" else 0))
                if link:
                    label, url, end = link
                    out.append(hold(self._render_link(label, url, image=(c == "!"))))
                    i = end
                    continue
            out.append(c)
            i += 1
        result = escape("".join(out))
        result = _emphasis(result)
        return re.sub(r"\0(\d+)\0", lambda m: held[int(m.group(1))], result)

    def _link(self, text, i):
        """(label, url, end) for a [label](url "title") starting at text[i] == '[', else None."""
        depth = 0
        j = i
        while j < len(text):
            if text[j] == "\\":
                j += 2
                continue
            if text[j] == "`":
                run = 0
                while j + run < len(text) and text[j + run] == "`":
                    run += 1
                close = _find_backtick_run(text, j + run, run)
                j = close + run if close >= 0 else j + run
                continue
            if text[j] == "[":
                depth += 1
            elif text[j] == "]":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        if j >= len(text) or j + 1 >= len(text) or text[j + 1] != "(":
            return None
        match = re.match(r"\(\s*(<[^<>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"
                         r"(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)", text[j + 1:])
        if not match:
            return None
        url = match.group(1)
        if url.startswith("<") and url.endswith(">"):
            url = url[1:-1]
        return text[i + 1:j], url, j + 1 + match.end()

    def _render_link(self, label, url, image=False):
        url = re.sub(r"\\([" + re.escape(_PUNCTUATION) + "])", r"\1", url)
        if self.link_hook:
            url = self.link_hook(url)
        content = self.inline(label) if label else escape(url)
        if image:
            content = f"[image: {content}]"
        if url is None or not _SAFE_URL.match(url.strip()):
            return f'<span class="dropped-link">{content}</span>'
        return f'<a href="{escape(url.strip())}">{content}</a>'


def _find_backtick_run(text, start, run):
    """Index of the next run of exactly `run` backticks at or after start, or -1."""
    i = start
    while i < len(text):
        if text[i] == "`":
            j = i
            while j < len(text) and text[j] == "`":
                j += 1
            if j - i == run:
                return i
            i = j
        else:
            i += 1
    return -1


def _emphasis(text):
    # Runs on escaped text where held code, links and escapes are \0N\0 tokens.
    text = re.sub(r"\*\*(?=\S)(.+?)(?<=\S)\*\*", r"<strong>\1</strong>", text, flags=re.S)
    text = re.sub(r"(?<![\w\\])__(?=\S)(.+?)(?<=\S)__(?!\w)", r"<strong>\1</strong>", text, flags=re.S)
    text = re.sub(r"(?<![\w*])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![\w*])", r"<em>\1</em>", text, flags=re.S)
    text = re.sub(r"(?<!\w)_(?=[^\s_])(.+?)(?<=[^\s_])_(?!\w)", r"<em>\1</em>", text, flags=re.S)
    return text


def split_row(line):
    """The cells of a pipe-table row: split on '|' outside code spans, '\\|' kept as '|'."""
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|") and not line.endswith("\\|"):
        line = line[:-1]
    cells, current = [], []
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\" and i + 1 < len(line) and line[i + 1] == "|":
            current.append("\\|")
            i += 2
            continue
        if c == "`":
            run = 0
            while i + run < len(line) and line[i + run] == "`":
                run += 1
            close = _find_backtick_run(line, i + run, run)
            if close >= 0:
                current.append(line[i:close + run])
                i = close + run
                continue
            current.append(line[i:i + run])
            i += run
            continue
        if c == "|":
            cells.append("".join(current))
            current = []
            i += 1
            continue
        current.append(c)
        i += 1
    cells.append("".join(current))
    # Inside code spans '\|' means a literal '|' too (as GitHub renders it).
    return [re.sub(r"(`+)(.*?)\1", lambda m: m.group(0).replace("\\|", "|"), cell) for cell in cells]


def markdown_to_html(text, fence_hook=None, link_hook=None, heading_shift=0):
    """Converts Markdown text (the subset above) to an HTML fragment."""
    return Converter(fence_hook, link_hook, heading_shift).convert(text)
