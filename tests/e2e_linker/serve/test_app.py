"""``linker serve``'s application on a real server (uvicorn, a free local port) with the tiny
model: every endpoint; answers byte-identical to ``linker annotate`` whatever the batching;
BioC and PubTator bodies back in their format with only annotations added; each bad input
answered with its status and one line; the page in a real browser."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from click.testing import CliRunner
from PIL import Image

from data_tools.formats.mentions_jsonl import CANDIDATES
from e2e_linker.cli import main
from e2e_linker.collective.model_kb import assemble_kb
from e2e_linker.serve.config import ServeConfig
from e2e_linker.viewer.html_page import PALETTE
from tests.e2e_linker.serve.server_thread import running, tiny_settings
from tests.helpers.chromium import chromium, screenshot
from tests.helpers.hostile_inputs import CASES, GOOD_PUBTATOR, materialise

TEXTS = ["Aspirin caused a headache.", "Nothing here.",
         "Ibuprofen (ä ß é) and nausea; αβ-blocker 🙂 with aspirin and café headache.",
         "Cisplatin", "Treatment with haloperidol caused delirium in two cases.",
         "We observed renal failure after cisplatin exposure, and kidney failure later.",
         "Headache, nausea and delirium.", "The patient was given ibuprofen.",
         "acetylsalicylic acid", "A longer one: " + "aspirin and nausea, " * 12 + "end."]
BIOC_XML = ("<?xml version='1.0' encoding='UTF-8'?><collection><source>src</source>"
            "<date>2026</date><key>k.key</key><infon key='c'>v</infon><document><id>7</id>"
            "<infon key='d'>keep me</infon><passage><infon key='type'>title</infon>"
            "<offset>0</offset><text>Aspirin caused nausea.</text><annotation id='g1'>"
            "<infon key='type'>Chemical</infon><location offset='0' length='7'/>"
            "<text>Aspirin</text></annotation></passage><passage><offset>23</offset>"
            "<text>Renal failure after cisplatin.</text></passage><relation id='r1'>"
            "<infon key='relation'>CID</infon><node refid='g1' role='x'/></relation>"
            "</document></collection>")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_settings(tmp_path_factory.mktemp("serve"))


@pytest.fixture(scope="module")
def url(tiny):
    settings, _, _ = tiny
    # calls of 160 characters at most: a request of several texts is cut into pieces that
    # share calls with other requests' pieces, and its answer must not show it
    config = ServeConfig(settings=settings, max_wait_ms=50, max_queue=64,
                         max_request_bytes=200_000, max_batch_chars=160)
    with running(config) as base:
        yield base


def jsonl(url: str, payload: dict) -> bytes:
    answer = httpx.post(f"{url}/annotate", json=payload,
                        headers={"Accept": "application/x-ndjson"}, timeout=60)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/x-ndjson"
    return answer.content


def cli(tiny, monkeypatch, *args: str) -> None:
    settings, directory, kb_file = tiny
    monkeypatch.setenv("E2E_LINKER_CACHE", settings.cache_dir)
    result = CliRunner().invoke(main, ["annotate", *args, "--model", str(directory),
                                       "--kb", f"tsv:{kb_file}", "--index", "exact",
                                       "--threshold", "0"])
    assert result.exit_code == 0, result.output


def test_health_ready_info_and_the_openapi_schema(url, tiny):
    assert httpx.get(f"{url}/health").json() == {"status": "ok"}
    assert httpx.get(f"{url}/ready").json() == {"ready": True}
    info = httpx.get(f"{url}/info").json()
    settings, directory, kb_file = tiny
    assert info["state"] == "ready" and info["version"] not in ("", None)
    assert info["model"] == str(directory.resolve())
    assert info["kb_hash"] == assemble_kb(f"tsv:{kb_file}").content_hash()
    assert info["kb_concepts"] == 8 and info["types"] == ["Chemical", "Disease"]
    assert info["settings"]["batch_size"] == 16 and "cache_dir" not in info["settings"]
    assert info["limits"]["max_queue"] == 64
    assert info["threads"] == 1  # the model thread's torch threads (ServeConfig's default)
    schema = httpx.get(f"{url}/openapi.json").json()
    assert {"/annotate", "/normalize", "/health", "/ready", "/info", "/"} <= set(schema["paths"])
    body = schema["paths"]["/annotate"]["post"]["requestBody"]["content"]
    assert {"application/json", "text/plain", "application/xml", "application/bioc+json",
            "text/x-pubtator"} <= set(body)
    assert "texts" in body["application/json"]["schema"]["properties"]
    assert httpx.get(f"{url}/docs").status_code == 404  # its pages would load network scripts


def test_the_model_thread_runs_with_the_configured_torch_threads(tiny):
    import threading

    import torch

    from e2e_linker.serve.app import load_linker

    settings, _, _ = tiny
    seen = []
    before = torch.get_num_threads()
    try:
        for threads in (1, 2):
            thread = threading.Thread(target=lambda n=threads: seen.append(
                (load_linker(settings, n) is not None, torch.get_num_threads())))
            thread.start()
            thread.join(120)
    finally:
        torch.set_num_threads(before)
    assert seen == [(True, 1), (True, 2)]


def test_annotate_gives_the_mention_records_of_linker_annotate(url):
    answer = httpx.post(f"{url}/annotate", json={"text": TEXTS[2]}, timeout=60)
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
    [doc] = answer.json()["documents"]
    assert doc["id"] == "text-1" and doc["mentions"]
    for m in doc["mentions"]:
        assert TEXTS[2][m["start"]:m["end"]] == m["text"]  # exact on non-ASCII text
        assert set(m) >= {"document", "start", "end", "text", "type", "concept_id",
                          "mention_score", "link_score", "confidence"}
        assert 0.0 <= m["confidence"] <= 1.0  # always filled
        assert "explanation" not in m
    named = [m for m in doc["mentions"] if m["concept_id"]]
    assert named and all(m["concept_name"] for m in named)
    several = httpx.post(f"{url}/annotate", json={"texts": TEXTS[:2], "ids": ["a", "b"]},
                         timeout=60).json()
    assert [d["id"] for d in several["documents"]] == ["a", "b"]
    plain = httpx.post(f"{url}/annotate", content=TEXTS[2].encode(),
                       headers={"Content-Type": "text/plain; charset=utf-8"}, timeout=60)
    assert plain.json() == answer.json()
    assert httpx.post(f"{url}/annotate", json={"texts": []}).json() == {"documents": []}
    blank = httpx.post(f"{url}/annotate", json={"texts": ["", "   "]}, timeout=60).json()
    assert blank == {"documents": [{"id": "text-1", "mentions": []},
                                   {"id": "text-2", "mentions": []}]}


def test_the_same_bytes_whatever_the_batching_and_as_linker_annotate(url, tiny, tmp_path,
                                                                     monkeypatch):
    ids = [f"text-{n}" for n in range(1, len(TEXTS) + 1)]
    alone = [jsonl(url, {"texts": [t], "ids": [i]}) for t, i in zip(TEXTS, ids, strict=True)]
    before = httpx.get(f"{url}/info").json()["batching"]["largest_batch"]
    for _ in range(2):  # concurrently: requests share calls of the annotator
        with ThreadPoolExecutor(len(TEXTS)) as pool:
            together = list(pool.map(lambda p: jsonl(url, {"texts": [p[0]], "ids": [p[1]]}),
                                     zip(TEXTS, ids, strict=True)))
        assert together == alone
    assert httpx.get(f"{url}/info").json()["batching"]["largest_batch"] > max(before, 1)
    whole = jsonl(url, {"texts": TEXTS})  # one request, default IDs text-1, text-2, ...
    assert whole == b"".join(alone)
    # plain linker annotate on the same texts, one a line of text.txt (so IDs text-<line>)
    (tmp_path / "text.txt").write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    cli(tiny, monkeypatch, str(tmp_path / "text.txt"), "--lines", "--format", "jsonl",
        "-o", str(tmp_path / "out.jsonl"))
    assert (tmp_path / "out.jsonl").read_bytes() == whole


def test_a_call_run_inside_a_long_call_gives_the_same_bits(tiny):
    """Short requests that run at a forward pass of a long document's call (the worker lets
    them through there) get the bytes they get alone, and so does the long document."""
    from e2e_linker.api import text_document
    from e2e_linker.serve.app import load_linker, mentions_body
    from e2e_linker.serve.batching import ANNOTATE, READY, Batcher, Job

    settings, _, _ = tiny
    batcher = Batcher(lambda: load_linker(settings, 1), max_wait_s=0, preempt_after_s=0)
    batcher.start()
    batcher.thread.join(0.1)
    while batcher.state != READY:
        assert batcher.thread.is_alive()
        batcher.thread.join(0.1)
    linker = batcher.linker
    long_text = " ".join(TEXTS) * 40  # many chunks: many forward passes
    shorts: list = []

    def submit_shorts(*_):  # at the long call's first forward pass, in the worker thread
        if not shorts:
            shorts.extend(batcher.submit(Job(ANNOTATE, [text_document(t, f"s{n}")]))
                          for n, t in enumerate(TEXTS[:4]))

    hook = linker.annotator.model.encoder.model.register_forward_pre_hook(submit_shorts)
    try:
        long = batcher.submit(Job(ANNOTATE, [text_document(long_text, "long")]))
        long_docs = long.result(300)
    finally:
        hook.remove()
    short_docs = [f.result(60)[0] for f in shorts]
    assert batcher.stats.nested_calls >= 1 and len(short_docs) == 4
    batcher.close(60)
    alone = [linker.annotator.annotate([text_document(t, f"s{n}")])[0]
             for n, t in enumerate(TEXTS[:4])]
    long_alone = linker.annotator.annotate([text_document(long_text, "long")])
    assert mentions_body(short_docs, True) == mentions_body(alone, True)
    assert mentions_body(long_docs, True) == mentions_body(long_alone, True)


def test_explain_adds_the_deciding_step_and_top_candidates_only(url, tiny, tmp_path,
                                                                monkeypatch):
    kb = assemble_kb(f"tsv:{tiny[2]}")
    plain = httpx.post(f"{url}/annotate", json={"texts": TEXTS[:3]}, timeout=60).json()
    why = httpx.post(f"{url}/annotate", json={"texts": TEXTS[:3], "explain": True},
                     timeout=60).json()
    steps = set()
    for p_doc, w_doc in zip(plain["documents"], why["documents"], strict=True):
        for p, w in zip(p_doc["mentions"], w_doc["mentions"], strict=True):
            explanation = w.pop("explanation")
            assert w == p  # the rest unchanged
            assert 1 <= len(explanation["candidates"]) <= 5
            # the dense ranking's order: concepts of the span's type first (the tiny KB is
            # typed, the first candidate is of it), each group by score
            types = [kb.get(c["concept_id"]).type for c in explanation["candidates"]]
            order = [(t != types[0], -c["score"])
                     for t, c in zip(types, explanation["candidates"], strict=True)]
            assert order == sorted(order)
            steps.add(explanation["step"])
            if explanation["step"] == "dense":
                assert explanation["candidates"][0]["concept_id"] == p["concept_id"]
    assert {"exact", "dense"} <= steps
    query = httpx.post(f"{url}/annotate?explain=true", json={"texts": TEXTS[:3]}, timeout=60)
    assert query.json() == why | {"documents": query.json()["documents"]}
    assert "explanation" in query.json()["documents"][0]["mentions"][0]
    # linker annotate --explain writes the same records
    (tmp_path / "text.txt").write_text("\n".join(TEXTS[:3]) + "\n", encoding="utf-8")
    cli(tiny, monkeypatch, str(tmp_path / "text.txt"), "--lines", "--format", "jsonl",
        "-o", str(tmp_path / "why.jsonl"), "--explain")
    assert (tmp_path / "why.jsonl").read_bytes() == jsonl(url, {"texts": TEXTS[:3],
                                                                "explain": True})
    cli(tiny, monkeypatch, str(tmp_path / "text.txt"), "--lines", "--format", "jsonl",
        "-o", str(tmp_path / "plain.jsonl"))
    assert b"explanation" not in (tmp_path / "plain.jsonl").read_bytes()


@pytest.mark.parametrize("kind, suffix", [("application/xml", ".xml"),
                                          ("application/bioc+json", ".json"),
                                          ("text/x-pubtator", ".pubtator")])
def test_document_bodies_come_back_in_their_format_as_linker_annotate_writes_them(
        url, tiny, tmp_path, monkeypatch, kind, suffix):
    source = tmp_path / f"in{suffix}"
    if suffix == ".xml":
        source.write_text(BIOC_XML, encoding="utf-8")
    elif suffix == ".pubtator":
        source.write_text(GOOD_PUBTATOR, encoding="utf-8")
    else:  # the BioC JSON linker convert makes of the XML
        (tmp_path / "x.xml").write_text(BIOC_XML, encoding="utf-8")
        done = CliRunner().invoke(main, ["convert", str(tmp_path / "x.xml"), str(source)])
        assert done.exit_code == 0, done.output
    for replace in (False, True):
        answer = httpx.post(f"{url}/annotate" + ("?replace=true" if replace else ""),
                            content=source.read_bytes(), headers={"Content-Type": kind},
                            timeout=60)
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"].startswith(kind)
        out = tmp_path / f"out{replace}{suffix}"
        cli(tiny, monkeypatch, str(source), "-o", str(out),
            *(["--replace"] if replace else []))
        assert answer.content == out.read_bytes()
    if suffix == ".xml":
        kept = httpx.post(f"{url}/annotate", content=source.read_bytes(),
                          headers={"Content-Type": kind}, timeout=60).text
        for piece in ("<source>src</source>", "<key>k.key</key>", "keep me", "id=\"g1\"",
                      "<infon key=\"relation\">CID</infon>", "e2e0"):
            assert piece in kept.replace("'", '"'), piece


def test_normalize_links_given_mentions_in_order(url):
    answer = httpx.post(f"{url}/normalize", json=[{"text": "aspirin", "type": "Chemical"},
                                                  {"text": "nausea", "type": "Disease"},
                                                  {"text": "headache"}], timeout=120)
    assert answer.status_code == 200, answer.text
    assert [(m["text"], m["type"], m["concept_id"], m["concept_name"])
            for m in answer.json()["mentions"]] == [
        ("aspirin", "Chemical", "C001", "aspirin"), ("nausea", "Disease", "D002", "nausea"),
        ("headache", "", "D001", "headache")]
    assert all(0.9 < m["confidence"] <= 1.0 for m in answer.json()["mentions"])
    assert httpx.post(f"{url}/normalize", json=[]).json() == {"mentions": []}
    assert httpx.get(f"{url}/info").json()["normalizer"] == "ready"


@pytest.fixture(scope="module")
def gene_url(tmp_path_factory):
    """A server over a tiny model whose KB holds human and mouse genes, linked by name."""
    from e2e_linker.collective.settings import AnnotateSettings
    from tests.helpers.gene_kb import gene_linker_dir
    from tests.helpers.tiny import tiny_encoder_dir

    root = tmp_path_factory.mktemp("serve-genes")
    directory, spec = gene_linker_dir(root)
    settings = AnnotateSettings(model_dir=str(directory), kb=spec, cache_dir=str(root / "cache"),
                                index_kind="exact",
                                normalizer_model=str(tiny_encoder_dir(root / "norm")))
    with running(ServeConfig(settings=settings)) as base:
        yield base


def test_normalize_links_genes_with_their_species_and_answers_no_match(gene_url):
    answer = httpx.post(f"{gene_url}/normalize", json=[
        {"text": "BRCA1", "type": "Gene"}, {"text": "BRCA1", "type": "Gene", "species": "mouse"},
        {"text": "tamoxifen", "type": "Chemical"}, {"text": "ZZZ9", "type": "Gene"}],
        timeout=120)
    assert answer.status_code == 200, answer.text
    assert [{k: m[k] for k in ("concept_id", "concept_name", "species", "species_name")}
            for m in answer.json()["mentions"]] == [
        {"concept_id": "NCBIGene:672", "concept_name": "BRCA1", "species": "NCBITaxon:9606",
         "species_name": "Homo sapiens"},
        {"concept_id": "NCBIGene:12189", "concept_name": "Brca1",
         "species": "NCBITaxon:10090", "species_name": "Mus musculus"},
        {"concept_id": "MESH:D013629", "concept_name": "Tamoxifen", "species": None,
         "species_name": None},
        {"concept_id": None, "concept_name": None, "species": None, "species_name": None}]
    refused = httpx.post(f"{gene_url}/normalize",
                         json=[{"text": "BRCA1", "type": "Gene", "species": "martian"}],
                         timeout=60)
    assert refused.status_code == 422 and "unknown species 'martian'" in refused.json()["error"]


JSON = {"Content-Type": "application/json"}
BAD = [  # (what, path, body, headers, status, words of the one-line message)
    ("malformed JSON", "/annotate", b'{"text": ', JSON, 400, ["malformed JSON"]),
    ("not an object", "/annotate", b"[1, 2]", JSON, 422, ["object"]),
    ("text and texts", "/annotate", b'{"text": "a", "texts": ["b"]}', JSON, 422,
     ["either text or texts"]),
    ("neither", "/annotate", b'{"explain": true}', JSON, 422, ["either text or texts"]),
    ("unknown field", "/annotate", b'{"txt": "a"}', JSON, 422,
     ["txt", "Extra inputs", "the fields are text, texts, ids, explain, types"]),
    ("a text not a string", "/annotate", b'{"texts": ["a", 5]}', JSON, 422,
     ["texts.1", "valid string"]),
    ("ids of another length", "/annotate", b'{"texts": ["a"], "ids": ["x", "y"]}', JSON, 422,
     ["2 IDs for 1 texts"]),
    ("repeated ids", "/annotate", b'{"texts": ["a", "b"], "ids": ["x", "x"]}', JSON, 422,
     ["not unique"]),
    ("an empty id", "/annotate", b'{"texts": ["a"], "ids": [" "]}', JSON, 422,
     ["an ID is empty"]),
    ("BioC JSON as JSON", "/annotate", b'{"documents": []}', JSON, 422,
     ["application/bioc+json"]),
    ("lone surrogate", "/annotate", b'{"text": "a\\ud800"}', JSON, 400, ["malformed JSON"]),
    ("deep JSON", "/annotate", b"[" * 100_000, JSON, 400, ["malformed JSON"]),
    ("too many texts", "/annotate", json.dumps({"texts": ["a"] * 65}).encode(), JSON, 413,
     ["65 documents", "--max-queue"]),
    ("too large", "/annotate", json.dumps({"text": "a" * 300_000}).encode(), JSON, 413,
     ["over the limit of 200000 bytes"]),
    ("text not UTF-8", "/annotate", b"caf\xe9", {"Content-Type": "text/plain"}, 400,
     ["not valid UTF-8"]),
    ("Latin-1", "/annotate", b"a", {"Content-Type": "text/plain; charset=latin-1"}, 415,
     ["charset latin-1", "UTF-8"]),
    ("unknown type", "/annotate", b"a,b", {"Content-Type": "text/csv"}, 415,
     ["text/csv", "application/json"]),
    ("gzip", "/annotate", b"\x1f\x8b\x08\x00", {"Content-Type": "application/xml"}, 400,
     ["compressed"]),
    ("empty XML", "/annotate", b"", {"Content-Type": "application/xml"}, 400, ["empty"]),
    ("explain=maybe", "/annotate?explain=maybe", b'{"text": "a"}', JSON, 422, ["explain"]),
    ("format=xml", "/annotate?format=xml", b'{"text": "a"}', JSON, 422, ["json or jsonl"]),
    ("unknown query parameter", "/annotate?type=Gene", b'{"text": "a"}', JSON, 422,
     ["unknown query parameter type", "explain, format, replace, types"]),
    ("a type the service does not write", "/annotate?types=Chemical,Gene", b'{"text": "a"}',
     JSON, 422, ["types: Gene", "Chemical, Disease"]),
    ("an unknown type in the JSON", "/annotate", b'{"text": "a", "types": ["gene"]}', JSON,
     422, ["types: gene", "Chemical, Disease"]),
    ("types twice", "/annotate?types=Chemical", b'{"text": "a", "types": ["Chemical"]}',
     JSON, 422, ["not both"]),
    ("unknown query with a BioC body", "/annotate?replce=true", BIOC_XML.encode(),
     {"Content-Type": "application/xml"}, 422, ["replce"]),
    ("normalize malformed", "/normalize", b"[{", JSON, 400, ["malformed JSON"]),
    ("normalize object", "/normalize", b'{"text": "a"}', JSON, 422, ["valid array"]),
    ("normalize empty text", "/normalize", b'[{"text": ""}]', JSON, 422, ["0.text"]),
    ("normalize text/plain", "/normalize", b"aspirin", {"Content-Type": "text/plain"}, 415,
     ["application/json"]),
    ("unknown path", "/nothing", b"", {}, 404, ["Not Found"]),
]


@pytest.mark.parametrize("what, path, body, headers, status, words", BAD,
                         ids=[case[0] for case in BAD])
def test_bad_input_gets_its_status_and_one_line(url, what, path, body, headers, status,
                                                words):
    answer = httpx.post(f"{url}{path}", content=body, headers=headers, timeout=60)
    assert answer.status_code == status, answer.text
    message = answer.json()["error"]
    assert "\n" not in message and len(message) <= 300
    for word in words:
        assert word in message, (word, message)
    assert httpx.get(f"{url}/health").status_code == 200  # and the server is still there


@pytest.mark.parametrize("method, path", [("GET", "/annotate"), ("PUT", "/normalize"),
                                          ("DELETE", "/health"), ("POST", "/info")])
def test_a_wrong_method_gets_405_and_one_line(url, method, path):
    answer = httpx.request(method, f"{url}{path}", timeout=30)
    assert answer.status_code == 405, answer.text
    message = answer.json()["error"]
    assert "\n" not in message and "Method Not Allowed" in message


KINDS = {".xml": "application/xml", ".json": "application/bioc+json",
         ".jsonl": "application/bioc+json", ".txt": "text/x-pubtator"}


@pytest.mark.parametrize("case", [c for c in CASES if c.name not in (
    "truncated_gzip", "directory_with_mixed_formats", "directory_with_one_bad_file",
    "document_of_100k_tokens")], ids=lambda c: c.name)
def test_hostile_document_bodies_as_the_readers_answer_them(url, tmp_path, case):
    source = materialise(case, tmp_path)
    answer = httpx.post(f"{url}/annotate", content=source.read_bytes(),
                        headers={"Content-Type": KINDS[source.suffix]}, timeout=120)
    for secret in case.never:
        assert secret not in answer.text
    if case.error is None:
        assert answer.status_code == 200, answer.text
        return
    assert answer.status_code in (400, 413, 422), answer.text
    message = answer.json()["error"]
    assert "\n" not in message and str(tmp_path) not in message and "linker-serve-" not in message
    for word in case.error:
        if word != source.name:  # the file is the server's temporary copy: not named
            assert word in message, (word, message)


def test_the_page_highlights_and_explains_pasted_text(url, tmp_path):
    empty = httpx.get(f"{url}/")
    assert empty.status_code == 200 and '<form class="paste" method="post"' in empty.text
    text = "Aspirin caused a headache. <script>alert(1)</script>"
    posted = httpx.post(f"{url}/", data={"text": text, "explain": "1"}, timeout=60)
    assert posted.status_code == 200
    page = posted.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>" not in page
    assert 'class="m' in page and "why:" in page and 'class="cand"' in page
    assert "checked" in page  # the form keeps what was asked
    # self-contained: nothing is loaded from anywhere
    assert not re.search(r"<(script|link|img|iframe)|@import|url\(", page)
    assert "http" not in page.replace("https://meshb.nlm.nih.gov/record/ui?ui=", "")
    assert httpx.get(f"{url}/", params={"text": text}).text.count('class="m') == \
        page.count('class="m')
    chromium()  # skipped, with the reason, where there is none (fails under CI)
    saved = tmp_path / "page.html"
    saved.write_text(page, encoding="utf-8")
    image = Image.open(screenshot(saved, tmp_path / "page.png")).convert("RGB")
    colours = {rgb for _, rgb in image.getcolors(maxcolors=1 << 20)}
    used = {tuple(int(c[i:i + 2], 16) for i in (1, 3, 5)) for c in PALETTE[:2]}
    assert used & colours, "no mention highlight on screen"


def test_a_candidates_infon_is_what_explanations_are_read_from(url):
    assert CANDIDATES == "dense_candidates"  # the infon BioC output carries with ?explain
    answer = httpx.post(f"{url}/annotate?explain=true", content=GOOD_PUBTATOR.encode(),
                        headers={"Content-Type": "text/x-pubtator"}, timeout=60)
    assert answer.status_code == 200  # PubTator has no infons: the rows are unchanged
    xml = httpx.post(f"{url}/annotate?explain=true", content=BIOC_XML.encode(),
                     headers={"Content-Type": "application/xml"}, timeout=60).text
    assert 'key="dense_candidates"' in xml and 'key="link_method"' in xml


def test_every_answer_carries_the_linkers_record(tiny, tmp_path, monkeypatch):
    """With a KB of the real sources: JSON mentions with namespaced IDs and genes' species,
    the explanation's candidates namespaced too, the bytes ``linker annotate`` writes, BioC
    and PubTator bodies as it writes them, and the page showing a gene's species."""
    from dataclasses import replace

    from tests.helpers.namespaced_kb import RAT, RAT_NAME, namespaced_kb_spec

    settings, directory, _ = tiny
    spec = namespaced_kb_spec(tmp_path)
    config = ServeConfig(settings=replace(settings, kb=spec), max_wait_ms=10)
    with running(config) as base:
        answer = httpx.post(f"{base}/annotate", json={"texts": TEXTS, "explain": True},
                            timeout=60)
        assert answer.status_code == 200, answer.text
        mentions = [m for d in answer.json()["documents"] for m in d["mentions"]]
        lines = jsonl(base, {"texts": TEXTS, "explain": True})
        bioc = httpx.post(f"{base}/annotate", content=BIOC_XML.encode(),
                          headers={"Content-Type": "application/xml"}, timeout=60).content
        pubtator = httpx.post(f"{base}/annotate", content=GOOD_PUBTATOR.encode(),
                              headers={"Content-Type": "text/x-pubtator"}, timeout=60).content
        # a text with a gene, alone (a text's mentions do not depend on what shares its call)
        gene_text = next(TEXTS[int(d["id"].removeprefix("text-")) - 1]
                         for d in answer.json()["documents"] for m in d["mentions"]
                         if m["concept_id"].startswith("NCBIGene:"))
        page = httpx.post(f"{base}/", data={"text": gene_text}, timeout=60).text
    prefixes = ("MESH:", "NCBIGene:", "NCBITaxon:")
    assert mentions and all(m["concept_id"].startswith(prefixes) for m in mentions)
    genes = [m for m in mentions if m["concept_id"].startswith("NCBIGene:")]
    assert all((m["species"], m["species_name"]) == (RAT, RAT_NAME) for m in genes)
    assert all("species" not in m for m in mentions if m not in genes)
    assert all(c["concept_id"].startswith(prefixes)
               for m in mentions for c in m["explanation"]["candidates"])
    # linker annotate writes the same, in every format
    monkeypatch.setenv("E2E_LINKER_CACHE", settings.cache_dir)
    (tmp_path / "text.txt").write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    (tmp_path / "in.xml").write_text(BIOC_XML, encoding="utf-8")
    (tmp_path / "in.pubtator").write_text(GOOD_PUBTATOR, encoding="utf-8")
    for source, out, extra, answered in (
            ("text.txt", "out.jsonl", ("--lines", "--explain", "--format", "jsonl"), lines),
            ("in.xml", "out.xml", (), bioc), ("in.pubtator", "out.pubtator", (), pubtator)):
        done = CliRunner().invoke(main, ["annotate", str(tmp_path / source), "-o",
                                         str(tmp_path / out), *extra, "--model",
                                         str(directory), "--kb", spec, "--index", "exact",
                                         "--threshold", "0"])
        assert done.exit_code == 0, done.output
        assert (tmp_path / out).read_bytes() == answered, out
    assert b"NCBIGene:" not in pubtator and b"MESH:D" in pubtator  # PubTator3's columns
    assert b'key="species"' in bioc and b"NCBIGene:" in bioc
    assert "<i>species:</i> <a href=" in page and RAT_NAME in page


def test_types_keep_only_the_mentions_of_those_types_as_linker_annotate_types(
        url, tiny, tmp_path, monkeypatch):
    everything = jsonl(url, {"texts": TEXTS})
    chemicals = jsonl(url, {"texts": TEXTS, "types": ["Chemical"]})
    query = httpx.post(f"{url}/annotate?types=Chemical&format=jsonl", json={"texts": TEXTS},
                       timeout=60)
    assert query.content == chemicals
    rows = [json.loads(line) for line in chemicals.splitlines()]
    assert rows and {r["type"] for r in rows} == {"Chemical"}
    assert rows == [json.loads(line) for line in everything.splitlines()
                    if json.loads(line)["type"] == "Chemical"]
    (tmp_path / "text.txt").write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    cli(tiny, monkeypatch, str(tmp_path / "text.txt"), "--input-format", "text-lines",
        "--format", "jsonl", "--types", "Chemical", "-o", str(tmp_path / "out.jsonl"))
    assert (tmp_path / "out.jsonl").read_bytes() == chemicals
    # a document body keeps its own annotations, whatever their type
    xml = httpx.post(f"{url}/annotate?types=Disease", content=BIOC_XML.encode(),
                     headers={"Content-Type": "application/xml"}, timeout=60)
    assert xml.status_code == 200, xml.text
    tmp = tmp_path / "back.xml"
    tmp.write_bytes(xml.content)
    from data_tools.formats import read_documents

    [doc] = read_documents(tmp)
    predicted = [a for a in doc.annotations if a.infons.get("annotator") == "e2e_linker"]
    assert predicted and {a.type for a in predicted} == {"Disease"}
    assert [a.id for a in doc.annotations if a.infons.get("annotator") != "e2e_linker"] == \
        ["g1"]
