"""The explorer's server (`allennlp bits explore ... --serve`, bitcode_allennlp/bits/explore_server.py) against
hostile pages and malformed requests: each request below is sent as raw bytes, must get its 4xx answer (a JSON
`{"error": ...}`), at most one console line and no traceback, and the server must still answer a good request."""
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time

import pytest

from bitcode_allennlp.bits import explore_server
from bitcode_allennlp.bits.explore import build_explorer
from bitcode_allennlp.bits.explore_server import (MAX_CHARACTERS, MAX_CONNECTIONS, MAX_PENDING_ENCODES,
                                                  MAX_REQUEST_BYTES, MAX_SENTENCE_WORDS, MAX_WORDS, cost_batches,
                                                  make_server, open_regular_file)
from tests.conftest import FIXTURES, ROOT

CODES = FIXTURES / "data" / "codes"
SECRET = "TOP-SECRET-4f1c: not the explorer's"


@pytest.fixture(autouse=True)
def no_debug_tracebacks(monkeypatch):
    """`BITCODE_DEBUG=1` would print the tracebacks these tests check are not printed."""
    for name in ("BITCODE_DEBUG", "ALLENNLP_DEBUG"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def served(ner_hash_archive, tmp_path_factory):
    """One server for the module, over an explorer folder that also holds a secret, a symbolic link with a shard's
    name to a file outside, and a FIFO with a shard's name."""
    root = tmp_path_factory.mktemp("served")
    out = root / "out"
    build_explorer(str(CODES / "ner.dev.jsonl"), str(out))
    (root / "outside.txt").write_text(SECRET)
    (out / "secret.txt").write_text(SECRET)
    os.symlink(root / "outside.txt", out / "data" / "sentences" / "7.js")
    os.symlink(root / "outside.txt", out / "explorer.css.link")
    if hasattr(os, "mkfifo"):
        os.mkfifo(out / "data" / "sentences" / "8.js")
    server = make_server(str(out), ner_hash_archive, port=0, threads=1)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, out
    server.shutdown()
    server.server_close()


def send(port, data, timeout=30.0, close_write=False):
    """Raw bytes to the server; (status, headers, body) of its answer, read until it closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as connection:
        connection.sendall(data)
        if close_write:
            connection.shutdown(socket.SHUT_WR)
        chunks = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            chunk = connection.recv(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers, body


def request(port, method, path, body=None, headers=None, host="default"):
    """A request written by hand: `host` None leaves out the Host header; `headers` may hold anything."""
    head = [f"{method} {path} HTTP/1.1"]
    if host is not None:
        head.append(f"Host: {f'127.0.0.1:{port}' if host == 'default' else host}")
    data = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    extra = dict(headers or {})
    if body is not None and "Content-Length" not in extra:
        extra["Content-Length"] = str(len(data))
    head += [f"{name}: {value}" for name, value in extra.items()]
    return send(port, ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data)


def json_post(port, path, body, **headers):
    return request(port, "POST", path, body, {"Content-Type": "application/json",
                                              "Origin": f"http://127.0.0.1:{port}", **headers})


def still_serves(port):
    status, _, body = request(port, "GET", "/api/info")
    assert status == 200 and json.loads(body)["num_bits"] == 24


def refused(server, capfd, status, answer, lines=1):
    """The answer is `status` with a JSON error, the console got `lines` line(s) and no traceback, and the server
    still serves."""
    got, headers, body = answer
    assert got == status, body
    assert headers["content-type"].startswith("application/json") and json.loads(body)["error"]
    assert headers["x-content-type-options"] == "nosniff" and headers["cache-control"] == "no-store"
    err = capfd.readouterr().err
    assert "Traceback" not in err and len(err.splitlines()) == lines, err
    assert SECRET.encode() not in body
    still_serves(server.server_address[1])
    assert "Traceback" not in capfd.readouterr().err
    return json.loads(body)["error"]


# ------------------------------------------------------------------------------------------ who may ask
@pytest.mark.parametrize("method, path", [("GET", "/api/info"), ("GET", "/"), ("GET", "/data/entries.js"),
                                          ("POST", "/api/encode"), ("OPTIONS", "/api/encode")])
@pytest.mark.parametrize("host", ["evil.example:{port}", None, "127.0.0.1:{other}", "127.0.0.1.evil.example:{port}",
                                  "127.0.0.1:{port}\r\nHost: evil.example:{port}"])
def test_a_foreign_host_is_refused_whatever_the_request(served, capfd, method, path, host):
    server, _ = served
    port = server.server_address[1]
    body = {"sentences": ["Obama visits Berlin"]} if method == "POST" else None
    shown = host and host.format(port=port, other=port + 1 if port < 65535 else port - 1)
    answer = request(port, method, path, body, {"Content-Type": "application/json"}, host=shown)
    message = refused(server, capfd, 421, answer)
    assert "DNS rebinding" in message


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST:{port}"])
def test_the_servers_own_names_are_served(served, host):
    port = served[0].server_address[1]
    status, _, body = request(port, "GET", "/api/info", host=host.format(port=port))
    assert status == 200 and json.loads(body)["task"] == "ner"


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://127.0.0.1:{other}",
                                    "https://127.0.0.1:{port}", "http://localhost.evil.example:{port}"])
def test_a_foreign_origin_is_refused(served, capfd, origin):
    server, _ = served
    port = server.server_address[1]
    origin = origin.format(port=port, other=port + 1 if port < 65535 else port - 1)
    for method, path, body in (("POST", "/api/encode", {"sentences": ["Obama visits Berlin"]}),
                               ("GET", "/api/info", None)):
        answer = request(port, method, path, body, {"Content-Type": "application/json", "Origin": origin})
        assert "not this page's" in refused(server, capfd, 403, answer)


@pytest.mark.parametrize("content_type", ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x", None, "application/json; charset=latin-1",
                                          "application/jsonp"])
def test_a_post_that_is_not_json_is_refused_as_a_cross_site_form_would_send_it(served, capfd, content_type):
    server, _ = served
    port = server.server_address[1]
    headers = {"Content-Type": content_type} if content_type else {}
    answer = request(port, "POST", "/api/encode", {"sentences": ["Obama visits Berlin"]}, headers)
    assert "application/json" in refused(server, capfd, 415, answer)


@pytest.mark.parametrize("site", ["cross-site", "same-site", "Cross-Site"])
def test_a_cross_site_fetch_is_refused(served, capfd, site):
    server, _ = served
    port = server.server_address[1]
    # a hostile page's <script src=".../data/entries.js"> (the corpus), or a fetch of the encoder
    answer = request(port, "GET", "/data/entries.js", headers={"Sec-Fetch-Site": site, "Sec-Fetch-Mode": "no-cors",
                                                                "Sec-Fetch-Dest": "script"})
    assert "Sec-Fetch-Site" in refused(server, capfd, 403, answer)
    answer = json_post(port, "/api/encode", {"sentences": ["Obama visits Berlin"]}, **{"Sec-Fetch-Site": site})
    refused(server, capfd, 403, answer)
    answer = request(port, "GET", "/", headers={"Sec-Fetch-Site": site, "Sec-Fetch-Mode": "navigate",
                                                "Sec-Fetch-Dest": "iframe"})  # framed by another site
    refused(server, capfd, 403, answer)


def test_a_link_from_another_site_opens_the_page_and_the_page_may_load_its_files(served):
    server, out = served
    port = server.server_address[1]
    navigation = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
    status, headers, body = request(port, "GET", "/", headers=navigation)
    assert status == 200 and body == (out / "index.html").read_bytes()
    assert "frame-ancestors 'none'" in headers["content-security-policy"] and headers["x-frame-options"] == "DENY"
    status, _, body = request(port, "GET", "/data/meta.js", headers={"Sec-Fetch-Site": "same-origin"})
    assert status == 200 and body == (out / "data" / "meta.js").read_bytes()


def test_the_pages_own_post_is_answered_as_model_encode(served):
    server, _ = served
    port = server.server_address[1]
    model = server.RequestHandlerClass.func.model
    sentences = ["Obama visits Berlin", ["Rain", "in", "Leeds"], "", "The United Nations met in New York on Monday "
                 "to talk about the weather in Paris , London and Tokyo .", ["Paris"] * 40]
    status, headers, body = json_post(port, "/api/encode", {"sentences": sentences},
                                      **{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"})
    assert status == 200 and headers["cache-control"] == "no-store"
    assert json.loads(body)["predictions"] == [e.to_dict() for e in model.encode(sentences)]
    status, _, body = json_post(port, "/api/diff", {"a": "I love Paris", "b": "I love Paris Hilton"},
                                **{"Origin": f"http://localhost:{port}"})
    assert status == 200 and [pair[:2] for pair in json.loads(body)["pairs"]] == [[0, 0], [1, 1], [2, 2], [None, 3]]


def test_concurrent_encodes_give_the_serial_codes(served):
    server, _ = served
    port = server.server_address[1]
    model = server.RequestHandlerClass.func.model
    texts = [["Obama visits Berlin"], ["Rain in Leeds", "I love Paris Hilton"], ["The Queen met Macron in Rome"],
             ["Apple hired Tim Cook", "EU", "Mr. Smith went to Washington"]]
    serial = [[e.to_dict() for e in model.encode(sentences)] for sentences in texts]
    answers = {}

    def client(index):
        answers[index] = [json_post(port, "/api/encode", {"sentences": texts[index]}) for _ in range(3)]

    threads = [threading.Thread(target=client, args=(i,)) for i in range(MAX_PENDING_ENCODES)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(answers) == list(range(MAX_PENDING_ENCODES))
    for index, results in answers.items():
        for status, _, body in results:
            assert status == 200 and json.loads(body)["predictions"] == serial[index]


# ------------------------------------------------------------------------------------------ how much work
def words(n, word="Paris"):
    return [word] * n


@pytest.mark.parametrize("sentences, what", [
    ([words(MAX_SENTENCE_WORDS)] * (MAX_WORDS // MAX_SENTENCE_WORDS) + [words(MAX_WORDS % MAX_SENTENCE_WORDS + 1)],
     f"over the limit of {MAX_WORDS:,}"),
    ([words(MAX_SENTENCE_WORDS + 1)], "sentence 0 has"),
    (["ok", ", " * (MAX_SENTENCE_WORDS + 1)], "sentence 1 has"),  # a text: its words as the predictor splits it
    ([["x" * (MAX_CHARACTERS // 2)], "y" * (MAX_CHARACTERS // 2 + 1)], "characters"),
    ([words(31)] * 64 + [["one more"]], None),  # over MAX_SENTENCES: 400, not 413
])
def test_a_request_over_the_bounds_is_refused_before_it_is_encoded(served, capfd, monkeypatch, sentences, what):
    server, _ = served
    model = server.RequestHandlerClass.func.model
    calls = []
    monkeypatch.setattr(model, "encode", lambda *args, **kwargs: calls.append(args))
    answer = json_post(server.server_address[1], "/api/encode", {"sentences": sentences})
    message = refused(server, capfd, 400 if what is None else 413, answer)
    assert what is None or what in message
    assert calls == []


def test_a_request_at_the_bounds_is_encoded_in_batches_of_bounded_padding(served, monkeypatch):
    server, _ = served
    model = server.RequestHandlerClass.func.model
    sentences = [words(MAX_SENTENCE_WORDS, "x")] + [words(12, "y")] * 40 + [words(MAX_SENTENCE_WORDS, "z")]
    sentences.append(words(MAX_WORDS - sum(map(len, sentences)), "w"))
    assert sum(map(len, sentences)) == MAX_WORDS
    batches = []
    encode = model.encode

    def spy(texts, batch_size=None):
        batches.append((len(texts), max(len(t) for t in texts)))
        return encode(texts, batch_size=batch_size)

    monkeypatch.setattr(model, "encode", spy)
    status, _, body = json_post(server.server_address[1], "/api/encode", {"sentences": sentences})
    predictions = json.loads(body)["predictions"]
    assert status == 200 and [len(p["words"]) for p in predictions] == list(map(len, sentences))
    assert predictions[1] == encode([words(12, "y")])[0].to_dict()  # batched apart from the long ones, same codes
    assert all(count == 1 or count * longest <= MAX_SENTENCE_WORDS for count, longest in batches)
    assert sum(count for count, _ in batches) == len(sentences)


def test_cost_batches():
    assert list(cost_batches([3, 3, 3], budget=9)) == [(0, 3)]
    assert list(cost_batches([3, 3, 3, 3], budget=9)) == [(0, 3), (3, 4)]
    assert list(cost_batches([20, 1, 1], budget=9)) == [(0, 1), (1, 3)]
    assert list(cost_batches([0, 0, 4], budget=8)) == [(0, 2), (2, 3)]
    assert list(cost_batches([], budget=8)) == []


def test_too_many_encodes_at_once_are_503(served, capfd):
    server, _ = served
    slots = server.RequestHandlerClass.func.encode_slots
    held = 0
    try:  # the model busy with MAX_PENDING_ENCODES requests
        while held < MAX_PENDING_ENCODES and slots.acquire(timeout=10):
            held += 1
        assert held == MAX_PENDING_ENCODES
        status, headers, body = json_post(server.server_address[1], "/api/encode", {"sentences": ["Obama"]})
        assert status == 503 and headers["retry-after"] == "1" and "try again" in json.loads(body)["error"]
    finally:
        for _ in range(held):
            slots.release()
    assert "Traceback" not in capfd.readouterr().err
    assert json_post(server.server_address[1], "/api/encode", {"sentences": ["Obama"]})[0] == 200


def test_too_many_connections_are_503(served):
    server, _ = served
    held = 0
    try:  # (a thread of an earlier request may take a moment to give its slot back)
        while held < MAX_CONNECTIONS and server.connections.acquire(timeout=10):
            held += 1
        assert held == MAX_CONNECTIONS
        status, headers, body = request(server.server_address[1], "GET", "/api/info")
        assert status == 503 and headers["retry-after"] == "1" and "connections" in json.loads(body)["error"]
    finally:
        for _ in range(held):
            server.connections.release()
    still_serves(server.server_address[1])


def test_a_stalled_body_times_out_with_408(served, capfd, monkeypatch):
    server, _ = served
    port = server.server_address[1]
    monkeypatch.setattr(server.RequestHandlerClass.func, "timeout", 0.5)
    head = (f"POST /api/encode HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            "Content-Length: 100\r\n\r\n{\"sen").encode()
    started = time.monotonic()
    answer = send(port, head, timeout=20)
    assert time.monotonic() - started < 10
    monkeypatch.undo()
    refused(server, capfd, 408, answer)


# ------------------------------------------------------------------------------------------ which files
@pytest.mark.parametrize("path", ["/secret.txt", "/data/", "/data", "/data/sentences/", "/data/sentences/7.js",
                                  "/data/sentences/8.js", "/explorer.css.link", "/../outside.txt", "/..%2foutside.txt",
                                  "/%2e%2e/outside.txt", "/data/..%2f..%2fsecret.txt", "/data/../secret.txt",
                                  "/./index.html", "/data//meta.js", "/index.html/", "/INDEX.HTML", "/index.html%00",
                                  "/data/sentences/00.js", "/data/sentences/-1.js", "/data/sentences/1e2.js",
                                  "/data/sentences/99.js", "/api/", "/api/nothing", "/explorer.js.map"])
def test_only_the_explorers_own_files_are_served(served, capfd, path):
    server, _ = served
    answer = request(server.server_address[1], "GET", path)
    refused(server, capfd, 404, answer)


def test_a_symbolic_link_in_any_component_is_not_followed(tmp_path):
    folder = tmp_path / "out"
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "meta.js").write_text(SECRET)
    folder.mkdir()
    os.symlink(tmp_path / "elsewhere", folder / "data")
    with pytest.raises(OSError):
        open_regular_file(str(folder), "data/meta.js")
    (folder / "index.html").mkdir()
    with pytest.raises(OSError):
        open_regular_file(str(folder), "index.html")
    (folder / "explorer.js").write_text("ok")
    fd = open_regular_file(str(folder), "explorer.js")
    with os.fdopen(fd) as file:
        assert file.read() == "ok"


@pytest.mark.parametrize("path, content_type", [
    ("/", "text/html"), ("/index.html", "text/html"), ("/explorer.js", "text/javascript"),
    ("/explorer.css", "text/css"), ("/data/meta.js", "text/javascript"), ("/data/entries.js", "text/javascript"),
    ("/data/sentences/0.js", "text/javascript"), ("/data/sentences/0.js?v=1", "text/javascript")])
def test_the_explorers_files_are_served_with_their_types(served, path, content_type):
    server, out = served
    status, headers, body = request(server.server_address[1], "GET", path)
    name = path.split("?")[0].lstrip("/") or "index.html"
    assert status == 200 and body == (out / name).read_bytes()
    assert headers["content-type"] == content_type + "; charset=utf-8"
    assert headers["x-content-type-options"] == "nosniff"
    assert "script-src 'self';" in headers["content-security-policy"]
    assert headers["cross-origin-resource-policy"] == "same-origin"


def test_the_page_has_no_inline_script_for_its_policy_to_block(served):
    _, out = served
    html = (out / "index.html").read_text()
    assert html.count("<script") == 1 and '<script src="explorer.js"></script>' in html
    assert not re.search(r"\son[a-z]+\s*=|javascript:", html, re.IGNORECASE)  # no inline handler either


# ------------------------------------------------------------------------------------------ malformed requests
def raw_post(port, body, length=None, content_type="application/json"):
    length = len(body) if length is None else length
    return (f"POST /api/encode HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {length}\r\n\r\n").encode() + body


@pytest.mark.parametrize("make, status", [
    (lambda port: f"GET /index.html\x00.txt HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode("latin-1"), 400),
    (lambda port: f"GET /\x1b[31mred HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode("latin-1"), 400),
    (lambda port: raw_post(port, b'{"sentences": ["a"]}', "abc"), 400),
    (lambda port: raw_post(port, b'{"sentences": ["a"]}', "-5"), 400),
    (lambda port: raw_post(port, b'{"sentences": ["a"]}', "+20"), 400),
    (lambda port: raw_post(port, b'{"sentences": ["a"]}', "20\r\nContent-Length: 5"), 400),
    (lambda port: raw_post(port, b"", str(MAX_REQUEST_BYTES + 1)), 413),
    (lambda port: f"POST /api/encode HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                  "\r\n".encode(), 411),
    (lambda port: f"POST /api/encode HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                  "Transfer-Encoding: chunked\r\n\r\n5\r\n{}\r\n0\r\n\r\n".encode(), 400),
    (lambda port: raw_post(port, b'{"sentences": ["caf\xe9"]}'), 400),
    (lambda port: raw_post(port, b'{"sentences": ['), 400),
    (lambda port: raw_post(port, b'["Obama visits Berlin"]'), 400),
    (lambda port: raw_post(port, b'"Obama"'), 400),
    (lambda port: raw_post(port, b"[" * 200_000 + b"]" * 200_000), 400),
    (lambda port: raw_post(port, b'{"sentences": "Obama visits Berlin"}'), 400),
    (lambda port: raw_post(port, b'{"sentences": ["ok", 7]}'), 400),
    (lambda port: raw_post(port, b'{"sentences": [["ok", null]]}'), 400),
    (lambda port: raw_post(port, b'{"sentences": [["ok", "  "]]}'), 400),
    (lambda port: raw_post(port, b'{"sentences": ["\\ud800"]}'), 400),
    (lambda port: raw_post(port, b'{"nothing": 1}'), 400),
    (lambda port: b"GARBAGE\r\n\r\n", 400),
    (lambda port: b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 tls hello\r\n\r\n", 400),
    (lambda port: b"GET / HTTP/1.1 extra\r\n\r\n", 400),
    (lambda port: b"GET / HTTP/x.y\r\n\r\n", 400),
    (lambda port: b"GET /" + b"a" * 10_000 + b" HTTP/1.1\r\n\r\n", 414),
    (lambda port: f"PUT /index.html HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode(), 405),
    (lambda port: f"DELETE /api/encode HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode(), 405),
    (lambda port: f"GET /api/encode HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode(), 405),
    (lambda port: f"GET http://evil.example/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode(), 400),
])
def test_a_malformed_request_gets_a_4xx_json_answer_and_one_line(served, capfd, make, status):
    server, _ = served
    answer = send(server.server_address[1], make(server.server_address[1]))
    refused(server, capfd, status, answer)


def test_a_body_shorter_than_its_content_length_is_400(served, capfd):
    server, _ = served
    port = server.server_address[1]
    answer = send(port, raw_post(port, b'{"sentences": ["a"]}', 500), close_write=True)
    assert "not the 500" in refused(server, capfd, 400, answer)


def test_a_sentence_or_diff_of_the_wrong_type_is_named(served, capfd):
    server, _ = served
    port = server.server_address[1]
    message = refused(server, capfd, 400, json_post(port, "/api/encode", {"sentences": ["ok", {"a": 1}]}))
    assert '"sentences"[1]' in message and "dict" in message
    for body, key in (({"a": ["I"], "b": "x"}, '"a"'), ({"a": "x"}, '"b"'), ({"a": "x", "b": 3}, '"b"')):
        assert key in refused(server, capfd, 400, json_post(port, "/api/diff", body))


def test_the_console_line_shows_a_hostile_request_line_escaped(served, capfd):
    server, _ = served
    port = server.server_address[1]
    send(port, f"GET /\x1b]0;owned\x07 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode("latin-1"))
    err = capfd.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "\\x1b" in err and len(err.splitlines()) == 1


def test_an_error_of_the_model_is_a_500_json_answer_and_one_line(served, capfd, monkeypatch):
    server, _ = served
    model = server.RequestHandlerClass.func.model

    def broken(*args, **kwargs):
        raise RuntimeError("out of memory (simulated)")

    monkeypatch.setattr(model, "encode", broken)
    answer = json_post(server.server_address[1], "/api/encode", {"sentences": ["Obama"]})
    assert "simulated" in refused(server, capfd, 500, answer)


def test_an_exception_escaping_a_handler_is_one_console_line(served, capfd):
    server, _ = served
    try:
        raise ValueError("escaped\nwith a second line")
    except ValueError:
        server.handle_error(None, ("127.0.0.1", 1))
    err = capfd.readouterr().err
    assert "Traceback" not in err and len(err.splitlines()) == 1 and "ValueError" in err


def test_the_server_binds_127_0_0_1_only(served):
    server, _ = served
    assert server.server_address[0] == "127.0.0.1"
    assert explore_server.ExplorerServer.allow_reuse_port is False


# ------------------------------------------------------------------------------------------ the command
def explore_command(tmp_path, archive, port):
    return [sys.executable, "-m", "allennlp", "bits", "explore", str(CODES / "ner.dev.jsonl"), "--out",
            str(tmp_path / "x"), "--archive", str(archive), "--serve", "--port", str(port)]


def test_a_port_out_of_range_is_an_argparse_error(tmp_path):
    result = subprocess.run(explore_command(tmp_path, tmp_path / "none.tar.gz", 70000), capture_output=True,
                            text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 2 and "--port: must be a port number in 0..65535, got 70000" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "x").exists()


def test_a_port_in_use_is_one_line(ner_hash_archive, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = subprocess.run(explore_command(tmp_path, ner_hash_archive, port), capture_output=True, text=True,
                                timeout=300, cwd=ROOT)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if f"--port {port}" in line]
    assert len(lines) == 1 and "already in use; choose another port or --port 0" in lines[0], result.stderr


def test_sigterm_stops_the_server_with_one_line(ner_hash_archive, tmp_path):
    """AllenNLP's SIGTERM handler raises inside `serve_forever`: the server stops with one line and status 0."""
    import signal

    process = subprocess.Popen(explore_command(tmp_path, ner_hash_archive, 0), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:  # the second stdout line is the server's address: it is serving
            line = process.stdout.readline()
            if "http://127.0.0.1:" in line or not line:
                break
        assert "http://127.0.0.1:" in line, process.stderr.read()
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0 and "Traceback" not in err, err
    assert err.strip().splitlines()[-1].endswith("stopped (SIGTERM)")
