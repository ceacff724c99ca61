"""``GET /``: a page where a person pastes text and sees its mentions highlighted and linked.

Why no script: the page is ``linker view``'s rendering
(:func:`e2e_linker.viewer.html_page.render_page`: mentions coloured by type, concept, name,
scores and, with "why", the deciding step and candidates on hover) under a plain HTML form
that posts the text back to ``/``. It needs no network, no JavaScript and nothing but this
server; the text is escaped like any document text.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from urllib.parse import parse_qs

from data_tools.documents import Document
from e2e_linker.serve.errors import RequestError
from e2e_linker.viewer.html_page import NameOf, render_page

TITLE = "e2e_linker"
FORM_STYLE = ("<style>.paste textarea{width:100%;max-width:60em;height:9em;font:14px/1.5 "
              "system-ui,sans-serif}.paste p{margin:6px 0}.paste .err{color:#d00}</style>")


def form(text: str = "", explain: bool = False, message: str | None = None) -> str:
    """The paste form, holding ``text`` (and a one-line ``message`` when the last try
    failed)."""
    checked = " checked" if explain else ""
    error = f'<p class="err">{html.escape(message)}</p>' if message else ""
    return (f'{FORM_STYLE}<form class="paste" method="post" action="/">'
            f'<p><textarea name="text" placeholder="Paste biomedical text here">'
            f'{html.escape(text)}</textarea></p>'
            f'<p><label><input type="checkbox" name="explain" value="1"{checked}> '
            f'why this concept (hover a mention)</label> '
            f'<button type="submit">Annotate</button></p>{error}</form>')


def page(docs: Sequence[Document], name_of: NameOf | None, text: str = "",
         explain: bool = False, message: str | None = None) -> str:
    """The whole page: the form, then ``docs`` as ``linker view`` draws them."""
    return render_page(list(docs), name_of=name_of, title=TITLE,
                       intro=form(text, explain, message))


def form_fields(body: bytes) -> tuple[str, bool]:
    """``(text, explain)`` from the form's url-encoded body (strict UTF-8)."""
    try:
        fields = parse_qs(body.decode("ascii"), keep_blank_values=True, max_num_fields=10,
                          encoding="utf-8", errors="strict")
    except (UnicodeDecodeError, ValueError) as exc:
        raise RequestError(400, f"the form is not valid ({exc})") from None
    return fields.get("text", [""])[0], bool(fields.get("explain", [""])[0])
