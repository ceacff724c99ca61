"""The paste page (``e2e_linker.serve.page``): ``linker view``'s rendering under a form that
keeps the text (escaped) and the "why" box; the form's body read strictly."""

from __future__ import annotations

import pytest

from data_tools.documents import Annotation, Document, Passage
from e2e_linker.serve.errors import RequestError
from e2e_linker.serve.page import form_fields, page


def test_the_page_holds_the_form_the_escaped_text_and_the_explained_mentions():
    text = 'Aspirin </textarea><script>x</script>'
    doc = Document(id="text-1", passages=[Passage(offset=0, text=text)])
    doc.add_annotation(Annotation(0, 7, "Aspirin", "Chemical", ["D001241"], id="e2e0",
                                  infons={"link_method": "exact",
                                          "dense_candidates": "D001241|31.5000;C1|30.0000"},
                                  mention_score=0.9, link_score=31.5))
    html = page([doc], {"D001241": "Aspirin", "C1": "Other"}.get, text, explain=True,
                message="busy <now>")
    assert '<form class="paste" method="post" action="/">' in html
    assert "&lt;/textarea&gt;&lt;script&gt;" in html and "<script>" not in html
    assert 'name="explain" value="1" checked' in html
    assert "busy &lt;now&gt;" in html
    assert "why:</i> exact KB name" in html
    assert "D001241 Aspirin 31.500" in html and "C1 Other 30.000" in html
    assert html.index("<form") < html.index('class="legend"')  # the form under the title


def test_form_fields_read_the_url_encoded_body():
    assert form_fields(b"text=Caf%C3%A9+au+lait&explain=1") == ("Café au lait", True)
    assert form_fields(b"text=") == ("", False)
    assert form_fields(b"") == ("", False)
    with pytest.raises(RequestError):
        form_fields(b"text=%E9")  # not UTF-8
    with pytest.raises(RequestError):
        form_fields(b"&".join(b"f%d=1" % n for n in range(50)))
