"""Who a submission is (names and emails from the export's metadata) and each student's full
feedback as an instructor sees it, one static HTML page per submission beside the class report.

A page is rendered from the stored results.json alone: every question's feedback as the student
sees it, then every case in full (`extra_data.cases`), the hidden "Instructor view" test, the
sandbox's events, the notebook's cells and what the code printed (docs/feedback.md).
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.reports.render import points

_CSS = """
body{font-family:system-ui,sans-serif;max-width:960px;margin:2em auto;padding:0 1em;color:#111}
h2{border-top:1px solid #ccc;padding-top:0.6em}code{background:#f4f4f4;padding:0 3px}
pre{background:#f4f4f4;padding:0.6em;overflow-x:auto}p.who{color:#333}
.instructor{border-left:4px solid #999;padding-left:1em;background:#fafafa}
"""


@dataclass(frozen=True)
class Person:
    """A submission's people as the export names them (a group has several)."""

    submission: str
    """The folder or zip's name, unique in the batch."""
    names: tuple[str, ...]
    """ "Ada Lovelace"."""
    emails: tuple[str, ...]
    """ "ada@uni.edu"."""

    @property
    def label(self) -> str:
        """ "Ada Lovelace <ada@uni.edu>", names joined for a group; the folder name when unknown."""
        who = []
        for i in range(max(len(self.names), len(self.emails))):
            name = self.names[i] if i < len(self.names) else ""
            email = self.emails[i] if i < len(self.emails) else ""
            who.append(f"{name} <{email}>" if name and email else name or email)
        return ", ".join(w for w in who if w) or self.submission


def _field(d: Mapping[str, Any], key: str) -> str:
    value = d.get(f":{key}", d.get(key))
    return str(value).strip() if value not in (None, "") else ""


def person(sub: Any) -> Person:
    """The people behind a submission: its metadata's submitters, else its recorded name."""
    name = getattr(sub, "name", str(sub))
    submitters = getattr(sub, "submitters", ()) or ()
    names = tuple(_field(s, "name") for s in submitters if isinstance(s, Mapping))
    emails = tuple(_field(s, "email") for s in submitters if isinstance(s, Mapping))
    if not any(names) and getattr(sub, "student_name", None):
        names = (str(sub.student_name),)
    return Person(name, names, emails)


def page_name(submission: str) -> str:
    """A file name for a submission's page: its name with anything unsafe replaced."""
    safe = re.sub(r"[^A-Za-z0-9._@-]", "_", submission).lstrip(".") or "submission"
    return safe[:120] + ".html"


# ------------------------------------------------------------------------- markdown


def _inline(text: str) -> str:
    """Escape, then `code`, **bold** and *italics* (the inline forms the feedback uses)."""
    out = []
    for k, piece in enumerate(re.split(r"(`[^`]*`)", text)):
        if k % 2:
            out.append(f"<code>{html.escape(piece[1:-1])}</code>")
        else:
            bold = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", html.escape(piece))
            out.append(re.sub(r"(?<![*\w])\*([^*\s][^*]*?)\*(?![*\w])", r"<i>\1</i>", bold))
    return "".join(out)


def markdown_html(text: str) -> str:
    """The feedback's markdown (headings, lists nested by indent, fences, paragraphs) as HTML;
    everything escaped, so a student's text in it stays text."""
    out: list[str] = []
    depth: list[int] = []  # indents of the open lists
    fence: list[str] | None = None
    para: list[str] = []

    def close_para() -> None:
        if para:
            out.append("<p>" + " ".join(_inline(p) for p in para) + "</p>")
            para.clear()

    def close_lists(to: int = -1) -> None:
        while depth and depth[-1] > to:
            depth.pop()
            out.append("</li></ul>")

    for line in text.split("\n"):
        if fence is not None:
            if line.strip().startswith("```"):
                out.append("<pre>" + html.escape("\n".join(fence)) + "</pre>")
                fence = None
            else:
                fence.append(line)
            continue
        if line.strip().startswith("```"):
            close_para()
            close_lists()
            fence = []
            continue
        item = re.match(r"^(\s*)[-*] (.*)$", line)
        heading = re.match(r"^(#{1,6}) (.*)$", line)
        if item:
            close_para()
            indent = len(item.group(1))
            if depth and indent == depth[-1]:
                out.append("</li><li>")
            elif not depth or indent > depth[-1]:
                depth.append(indent)
                out.append("<ul><li>")
            else:
                close_lists(indent)
                out.append("</li><li>" if depth else "<ul><li>")
                if not depth:
                    depth.append(indent)
            out.append(_inline(item.group(2)))
        elif heading:
            close_para()
            close_lists()
            level = min(len(heading.group(1)) + 1, 6)
            out.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
        elif not line.strip():
            close_para()
            close_lists()
        elif line.startswith(">"):
            close_para()
            out.append(f"<blockquote>{_inline(line.lstrip('> '))}</blockquote>")
        else:
            para.append(line.strip())
    if fence is not None:
        out.append("<pre>" + html.escape("\n".join(fence)) + "</pre>")
    close_para()
    close_lists()
    return "\n".join(out)


# ------------------------------------------------------------------------- pages


def _case_markdown(case: Mapping[str, Any]) -> str:
    passed = case.get("category") in ("passed", "carried")
    said = "; ".join(str(m) for m in case.get("messages", [])) or str(case.get("category", ""))
    hidden = "" if case.get("visible") else " (hidden)"
    lines = [f"- {'✔' if passed else '✘'} {case.get('label', '')}{hidden}: {said}"]
    for key in ("line", "inputs", "got", "expected"):
        if case.get(key):
            lines.append(f"  - {key}: `{case[key]}`")
    return "\n".join(lines)


def page_html(assignment_title: str, who: Person, data: Mapping[str, Any]) -> str:
    """One student's full feedback, instructor view, from their results.json."""
    esc = html.escape
    extra = data.get("extra_data", {}) if isinstance(data.get("extra_data"), dict) else {}
    tests = [t for t in data.get("tests", []) if isinstance(t, dict)]
    scored = [t for t in tests if t.get("extra_data", {}).get("kind") in ("code", "written")]
    total = sum(float(t.get("max_score", 0)) for t in scored)
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(who.label)} — "
        f"{esc(assignment_title)}</title><style>{_CSS}</style></head><body>",
        "<p><a href='../" + "REPORT" + "'>← class report</a></p>",
        f"<h1 id='student'>{esc(who.label)}</h1>",
        f"<p class=who>{esc(assignment_title)} · submission <code>{esc(who.submission)}</code>"
        f" · variant key <code>{esc(str(extra.get('student') or 'default'))}</code></p>",
        f"<p id='score'><b>{points(float(data.get('score', 0)))} / {points(total)}</b></p>",
        "<h2>What the student sees</h2>",
        markdown_html(str(data.get("output", ""))),
    ]
    for t in tests:
        kind = t.get("extra_data", {}).get("kind")
        if kind == "detail":
            continue
        heading = f"{t.get('name', '')} — {points(float(t.get('score', 0)))}/{points(float(t.get('max_score', 0)))}"
        parts.append(f"<h2>{esc(heading)}</h2>")
        if t.get("visibility") not in ("visible", None):
            parts.append(f"<p class=who>visibility: {esc(str(t.get('visibility')))}</p>")
        parts.append(markdown_html(str(t.get("output", ""))))
        cases = t.get("extra_data", {}).get("cases") or []
        if cases:
            body = "\n".join(_case_markdown(c) for c in cases if isinstance(c, dict))
            parts.append(
                "<div class=instructor><p><b>Every case in full</b> (instructor view)</p>"
                + markdown_html(body)
                + "</div>"
            )
    for t in tests:
        if t.get("extra_data", {}).get("kind") == "detail":
            parts.append(f"<h2>{esc(str(t.get('name', '')))}</h2>")
            parts.append(
                "<div class=instructor>" + markdown_html(str(t.get("output", ""))) + "</div>"
            )
    nb = extra.get("notebook")
    if isinstance(nb, dict):
        cells = [
            f"- {c.get('label', c.get('cell'))}: {c.get('what', '')}"
            + (f" ({c['detail']})" if c.get("detail") else "")
            for c in nb.get("cells", [])
            if isinstance(c, dict)
        ]
        parts.append("<h2>Notebook</h2>")
        parts.append(
            markdown_html(
                f"Graded from `{nb.get('file', '?')}`; written answers read from: "
                f"{nb.get('answers', '?')}.\n\n" + ("\n".join(cells) or "Every cell ran.")
            )
        )
    if extra.get("student_output"):
        parts.append("<h2>What the code printed</h2>")
        parts.append("<pre>" + esc(str(extra["student_output"])) + "</pre>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_pages(
    folder: Path,
    report_name: str,
    assignment_title: str,
    graded: Sequence[tuple[Any, Mapping[str, Any]]],
) -> dict[str, str]:
    """Write every submission's page into `folder`; the link to each, relative to the report."""
    folder.mkdir(parents=True, exist_ok=True)
    links: dict[str, str] = {}
    for sub, data in graded:
        who = person(sub)
        name = page_name(who.submission)
        if f"{folder.name}/{name}" in links.values():  # two names made safe alike
            name = f"{name[:-5]}-{len(links)}.html"
        text = page_html(assignment_title, who, data).replace(
            "href='../REPORT'", f"href='../{html.escape(report_name, quote=True)}'"
        )
        (folder / name).write_text(text, encoding="utf-8")
        links[who.submission] = f"{folder.name}/{name}"
    return links
