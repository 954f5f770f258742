"""`allennlp bits explore ... --serve`: the explorer's folder on localhost, with the archive behind it.

Where this sits: `bits/explore.py` writes the folder; this serves it (standard library `http.server`, bound to
127.0.0.1) and answers two JSON requests with the archive loaded once by `bitcode_allennlp.load` (`api.CodeModel`,
whose `encode` is what `allennlp predict` writes):

* `POST /api/encode` `{"sentences": [text or [words], ...]}` -> `{"num_bits": K, "predictions": [...]}`, each
  prediction `Encoded.to_dict()` (words, codes, bits, tags / entities / tree);
* `POST /api/diff` `{"a": text, "b": text}` -> both predictions and the aligned pairs of `bits.diff.diff_codes`
  (`[index_a, index_b, differing heads]`), as `allennlp bits diff ARCHIVE A B` aligns them;
* `GET /api/info` -> `{"archive", "task", "num_bits"}` (the page shows its typing box when this answers).

Threat model. The server trusts nothing that reaches it: not the local processes that can connect to 127.0.0.1, and
not the web pages the user has open, which can make the browser send requests to it (a cross-site form or `fetch`,
a `<script src>`, or a DNS-rebinding page whose own name resolves to 127.0.0.1 and which may then read the answers).
What each check stops:

* **Host allow-list** (`127.0.0.1:PORT`, `localhost:PORT`, `[::1]:PORT`; anything else, or none, is 421, for every
  method and path): DNS rebinding, by which a page of another site reaches the server under its own name and so may
  read every answer (the archive's path, the corpus) and drive the encoder.
* **Origin, Sec-Fetch-Site, Content-Type**: a request whose `Origin` is not the server's own
  (`http://127.0.0.1:PORT`, `http://localhost:PORT`) is 403; so is one with `Sec-Fetch-Site` other than
  `same-origin` or `none` (what a browser sends for a cross-site `<script src>` of the corpus, or a frame), except a
  top-level navigation to the page itself; a POST must be `application/json` (415), which no cross-site form or
  simple request can send without a CORS preflight, which is never granted (no `Access-Control-*` header; OPTIONS
  is refused). Every answer also says `Cross-Origin-Resource-Policy: same-origin`, for browsers that send no
  `Sec-Fetch-Site`.
* **Bounds on work**: a body of at most `MAX_REQUEST_BYTES`, `MAX_SENTENCES` sentences, `MAX_CHARACTERS`
  characters, `MAX_SENTENCE_WORDS` words per sentence and `MAX_WORDS` per request (413, checked before anything is
  encoded; the sentences go through the model one batch of at most `MAX_SENTENCE_WORDS` padded words at a time, so
  a request at the bounds costs about what one sentence of `MAX_SENTENCE_WORDS` words does); at most
  `MAX_PENDING_ENCODES` encodes running or waiting (503 with Retry-After); at most `MAX_CONNECTIONS` connections,
  hence threads, open (503); a client that stops sending is answered 408 after `READ_TIMEOUT` seconds.
* **File allow-list**: only the explorer's own files are served (`PAGE_FILES` and `data/sentences/N.js`, matched as
  written, so no spelling of `..` or `%2e` reaches the disk), regular files only, each component of their path
  opened without following a symbolic link; anything else in `--out` is 404 and no folder is listed.
* **Headers**: `X-Content-Type-Options: nosniff`, `Content-Security-Policy` (scripts of the page's own origin only,
  no inline script, no framing), `Cache-Control: no-store`; the page builds its nodes from text nodes, never HTML, so
  corpus text or a typed sentence never runs as script.
* **Malformed requests** (a bad request line, a NUL in the path, a bad Content-Length, a short body, bytes that are
  not UTF-8, JSON that is not an object, a sentence that is neither text nor a list of words) get a 4xx JSON
  `{"error": ...}`; the console gets one line per refused request (its text escaped), never a traceback.

Not in scope: a local user who can write into `--out` or run code as the user (they need no server).
"""
import errno
import json
import os
import re
import socket
import stat
import sys
import threading
import time
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

MAX_REQUEST_BYTES = 1_000_000
"""Bytes of a POST body."""
MAX_SENTENCES = 64
"""Sentences of one `/api/encode` request."""
MAX_SENTENCE_WORDS = 512
"""Words of one sentence (a text's words counted as the predictor splits it, before encoding); also the most padded
words (sentences x the longest) of one model call (`cost_batches`). Measured on the tiny fixture model
(ner_hash.jsonnet, 1 torch thread), peak RSS over one request after a warm-up: 2,000 words in 4 sentences (512, 512,
512, 464) +110 MB, as 4 texts +131 MB, 64 sentences of 31 words +38 MB, one sentence of 512 words of 38 characters
(20,000, the most word pieces) +223 MB, of 38 CJK characters +265 MB (the most found). One sentence of 512 words and
63 of 23 in one padded batch took +5.6 GB, in `cost_batches` +93 MB; before these bounds, one request within 1 MB
and 64 sentences took the process to 21.7 GB. A PLM larger than the fixture's costs more per word piece."""
MAX_WORDS = 2_000
"""Words of one request, all its sentences together (`MAX_SENTENCE_WORDS` says what a request at the bounds costs)."""
MAX_CHARACTERS = 20_000
"""Characters of one request, all its sentences together, counted before a text is split into words (a word's
pieces are at most its characters)."""
MAX_PENDING_ENCODES = 4
"""Encodes (`/api/encode`, `/api/diff`) running or waiting for the model at once; one more is 503."""
MAX_CONNECTIONS = 32
"""Connections open at once; one more is answered 503 and closed."""
READ_TIMEOUT = 10.0
"""Seconds a socket read may wait (the request line, the headers, the body); a request that stalls gets 408."""
LINGER_SECONDS = 1.0
"""Seconds a refused request's connection reads what its client still sends (`linger`)."""
MAX_REQUEST_LINE = 8_192
"""Bytes of the request line (414 over it)."""
PAGE_FILES = {"/": "index.html", "/index.html": "index.html", "/explorer.js": "explorer.js",
              "/explorer.css": "explorer.css", "/data/meta.js": "data/meta.js", "/data/entries.js": "data/entries.js"}
"""The explorer's files (besides `SHARD_PATH`): URL path -> the file under the folder."""
SHARD_PATH = re.compile(r"/data/sentences/(0|[1-9][0-9]{0,8})\.js")
CONTENT_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                 ".css": "text/css; charset=utf-8"}
CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                           "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; "
                           "frame-ancestors 'none'")
"""The page's policy: its own scripts only (explorer.js sets `style` attributes, hence the inline styles)."""


class Refusal(Exception):
    """An answer other than 200: its status, the one-line message of its `{"error": ...}`, extra headers."""

    def __init__(self, status: int, message: str, headers: Optional[Dict[str, str]] = None) -> None:
        super().__init__(message)
        self.status = status
        self.headers = headers or {}


def shown(text: Any, limit: int = 120) -> str:
    """`text` safe for a console line or a message: ASCII with escapes (no control character), at most `limit`."""
    value = ascii(str(text))[1:-1]
    return value if len(value) <= limit else value[:limit] + "..."


def own_hosts(port: int) -> Tuple[str, ...]:
    """The Host headers of this server (a browser leaves out the port 80)."""
    hosts = tuple(f"{name}:{port}" for name in ("127.0.0.1", "localhost", "[::1]"))
    return hosts + (("127.0.0.1", "localhost", "[::1]") if port == 80 else ())


def open_regular_file(folder: str, relative: str) -> int:
    """
    A descriptor of the regular file `relative` (`/`-separated) under `folder`, opened without following a symbolic
    link in any component under `folder`; `OSError` for a link, a folder, a FIFO, a device or a missing file.
    """
    parts = relative.split("/")
    nofollow, directory = getattr(os, "O_NOFOLLOW", 0), getattr(os, "O_DIRECTORY", 0)
    if nofollow and directory and os.open in os.supports_dir_fd:
        parent = os.open(folder, os.O_RDONLY | directory)
        try:
            for part in parts[:-1]:
                inner = os.open(part, os.O_RDONLY | directory | nofollow, dir_fd=parent)
                os.close(parent)
                parent = inner
            # O_NONBLOCK: a FIFO put in the folder must not block the thread on open
            fd = os.open(parts[-1], os.O_RDONLY | nofollow | getattr(os, "O_NONBLOCK", 0), dir_fd=parent)
        finally:
            os.close(parent)
    else:  # no dir_fd (Windows): each component checked by lstat, the file opened and checked to be the one seen
        path = folder
        for part in parts[:-1]:
            path = os.path.join(path, part)
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                raise NotADirectoryError(errno.ENOTDIR, "not a folder", path)
        path = os.path.join(path, parts[-1])
        seen = os.lstat(path)
        if not stat.S_ISREG(seen.st_mode):
            raise IsADirectoryError(errno.EISDIR, "not a regular file", path)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (seen.st_dev, seen.st_ino):
            os.close(fd)
            raise FileNotFoundError(errno.ENOENT, "replaced while opened", path)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise IsADirectoryError(errno.EISDIR, "not a regular file", relative)
    return fd


def print_debug_traceback() -> None:
    """The traceback of the exception being handled, on stderr, only under `BITCODE_DEBUG=1` (`host.console.debug`)."""
    from bitcode_allennlp.host.console import debug

    if debug():
        import traceback

        traceback.print_exc()


def linger(connection: socket.socket, seconds: float = LINGER_SECONDS) -> None:
    """Ends the answer (FIN) and reads what the client still sends, for at most `seconds` and `MAX_REQUEST_BYTES`,
    before the socket closes: closing with unread bytes would reset the connection and lose the answer."""
    try:
        connection.shutdown(socket.SHUT_WR)
        deadline, left = time.monotonic() + seconds, MAX_REQUEST_BYTES
        while left > 0 and time.monotonic() < deadline:
            connection.settimeout(max(deadline - time.monotonic(), 0.001))
            chunk = connection.recv(min(left, 1 << 16))
            if not chunk:
                return
            left -= len(chunk)
    except OSError:
        pass


def cost_batches(num_words: Sequence[int], budget: int = MAX_SENTENCE_WORDS) -> Iterator[Tuple[int, int]]:
    """Consecutive `[start, stop)` runs of sentences whose padded size (sentences x the longest) is at most `budget`
    (a sentence alone may be longer), so no model call pads short sentences to a long one."""
    start = 0
    while start < len(num_words):
        stop, longest = start + 1, max(num_words[start], 1)
        while stop < len(num_words) and (stop + 1 - start) * max(longest, num_words[stop]) <= budget:
            longest = max(longest, num_words[stop])
            stop += 1
        yield start, stop
        start = stop


class ExplorerHandler(BaseHTTPRequestHandler):
    """The explorer's own files, and the `/api/` requests, each request checked as the module docstring says."""

    model: Any = None
    lock = threading.Lock()
    """One encode at a time (the model is used by one thread at a time), so concurrent answers are the serial ones."""
    encode_slots = threading.BoundedSemaphore(MAX_PENDING_ENCODES)
    """Encodes running or waiting for `lock` (`make_server` gives each server its own)."""
    timeout = READ_TIMEOUT
    default_request_version = "HTTP/1.0"  # an unparsable request line is answered with a status line too
    server_version = "bitcode-explorer"
    sys_version = ""

    def __init__(self, *args: Any, directory: str, **kwargs: Any) -> None:
        self.directory = os.fspath(directory)
        super().__init__(*args, **kwargs)

    # ---------------------------------------------------------------------------------------------- one request
    def handle_one_request(self) -> None:
        """One request, answered (or refused with a JSON error and one console line) whatever its bytes."""
        self.close_connection = True  # one request per connection
        self.requestline, self.command, self.request_version = "", "", self.default_request_version
        self._status: Optional[int] = None
        try:
            self.raw_requestline = self.rfile.readline(MAX_REQUEST_LINE + 1)
            if not self.raw_requestline:
                return
            if len(self.raw_requestline) > MAX_REQUEST_LINE:
                self.send_error(414, f"request line over {MAX_REQUEST_LINE:,} bytes")
                return
            if not self.parse_request():  # it has sent the error (`send_error`)
                return
            self.close_connection = True
            try:
                self._answer()
            except Refusal as refusal:
                self._refuse(refusal.status, str(refusal), refusal.headers)
            self.wfile.flush()
        except (socket.timeout, TimeoutError):
            if self.requestline and self._status is None:  # an idle connection (a browser's spare one) goes quietly
                self._try_refuse(408, f"the request did not arrive within {self.timeout:g} s")
        except (ConnectionError, BrokenPipeError):
            pass  # the client went away
        except Exception as error:  # a bug, or the model's: 500, one line (the traceback under BITCODE_DEBUG=1)
            self._try_refuse(500, shown(f"{type(error).__name__}: {error}", 300))
            print_debug_traceback()

    def _try_refuse(self, status: int, message: str) -> None:
        if self._status is not None:
            self.log_error("%d %s (after the answer began)", status, message)
            return
        try:
            self._refuse(status, message)
            self.wfile.flush()
        except OSError:
            self.log_error("%d %s (the client went away)", status, message)

    def _answer(self) -> None:
        self._check_sender()
        path = self._request_path()
        if self.command in ("GET", "HEAD"):
            self._get(path)
        elif self.command == "POST":
            self._post(path)
        else:
            raise Refusal(405, f"method {shown(self.command, 20)} is not served (GET, HEAD or POST)",
                          {"Allow": "GET, HEAD, POST"})

    def _check_sender(self) -> None:
        """The Host, Origin and Sec-Fetch-Site checks (module docstring)."""
        port = self.server.server_address[1]
        hosts = self.headers.get_all("Host") or []
        if len(hosts) != 1 or hosts[0].strip().lower() not in own_hosts(port):
            given = "no Host" if not hosts else f"Host {shown(', '.join(hosts), 60)}"
            raise Refusal(421, f"{given}: this server answers only 127.0.0.1:{port} or localhost:{port} (a page of "
                               "another site reaching it by DNS rebinding is refused)")
        origins = self.headers.get_all("Origin") or []
        if origins and (len(origins) > 1 or origins[0].strip().lower() not in
                        [f"http://{host}" for host in own_hosts(port)]):
            raise Refusal(403, f"Origin {shown(', '.join(origins), 60)} is not this page's: cross-site requests are "
                               "refused")
        site = (self.headers.get("Sec-Fetch-Site") or "").strip().lower()
        if site and site not in ("same-origin", "none") and not self._opens_the_page():
            raise Refusal(403, f"Sec-Fetch-Site {shown(site, 20)}: only the explorer's own page may make requests")

    def _opens_the_page(self) -> bool:
        """A top-level navigation to the page (from a link anywhere): it reads nothing back, and may not be framed."""
        return (self.command in ("GET", "HEAD") and self.path.split("?", 1)[0] in ("/", "/index.html")
                and (self.headers.get("Sec-Fetch-Mode") or "").lower() == "navigate"
                and (self.headers.get("Sec-Fetch-Dest") or "").lower() == "document")

    def _request_path(self) -> str:
        """The request target's path (its query dropped), refused if it holds a NUL or other control character."""
        if re.search(r"[\x00-\x20\x7f]", self.path):
            raise Refusal(400, f"a NUL or control character in the path {shown(self.path, 60)}")
        if not self.path.startswith("/"):
            raise Refusal(400, f"the request target {shown(self.path, 60)} is not a path")
        return self.path.split("?", 1)[0]

    # ---------------------------------------------------------------------------------------------- answers
    def _get(self, path: str) -> None:
        if path == "/api/info":
            model = self.model
            self._send_json(200, {"archive": model.archive, "task": model.task, "num_bits": model.num_bits})
            return
        if path in ("/api/encode", "/api/diff"):
            raise Refusal(405, f"{path} takes a POST of application/json", {"Allow": "POST"})
        shard = SHARD_PATH.fullmatch(path)
        relative = PAGE_FILES.get(path) or (shard and f"data/sentences/{shard.group(1)}.js")
        if not relative:
            raise Refusal(404, f"{shown(path, 60)} is not one of the explorer's files")
        try:
            fd = open_regular_file(self.directory, relative)
        except OSError:
            raise Refusal(404, f"{shown(path, 60)}: no such file in the explorer's folder (or not a regular "
                               "file)") from None
        with os.fdopen(fd, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            self._start(200, CONTENT_TYPES[os.path.splitext(relative)[1]], size)
            if self.command == "HEAD":
                return
            while size > 0:
                chunk = file.read(min(size, 1 << 16))
                if not chunk:
                    break
                self.wfile.write(chunk)
                size -= len(chunk)

    def _post(self, path: str) -> None:
        if path not in ("/api/encode", "/api/diff"):
            raise Refusal(404, f"no such request: {shown(path, 60)}")
        kind, _, parameters = (self.headers.get("Content-Type") or "").partition(";")
        charset = re.search(r"charset\s*=\s*\"?([^\";\s]*)", parameters, re.IGNORECASE)
        if kind.strip().lower() != "application/json" or (charset and charset.group(1).lower() not in
                                                          ("utf-8", "utf8")):
            raise Refusal(415, "a POST must be Content-Type: application/json (UTF-8), got "
                               f"{shown(self.headers.get('Content-Type') or 'none', 60)}")
        request = self._read_json()
        answer = self.answer(path, request)
        if answer is None:
            raise Refusal(404, f"no such request: {shown(path, 60)}")
        self._send_json(200, answer)

    def _read_json(self) -> Dict[str, Any]:
        """The body: exactly Content-Length bytes (at most `MAX_REQUEST_BYTES`) of UTF-8 JSON holding an object."""
        if self.headers.get("Transfer-Encoding") is not None:
            raise Refusal(400, "Transfer-Encoding is not accepted: send the body with a Content-Length")
        lengths = self.headers.get_all("Content-Length") or []
        if not lengths:
            raise Refusal(411, "a POST needs a Content-Length")
        if len(lengths) > 1 or not re.fullmatch(r"[0-9]{1,12}", lengths[0].strip()):
            raise Refusal(400, f"Content-Length {shown(', '.join(lengths), 40)} is not a number of bytes")
        length = int(lengths[0])
        if length > MAX_REQUEST_BYTES:
            raise Refusal(413, f"a request body of {length:,} bytes is over the limit of {MAX_REQUEST_BYTES:,}")
        body = self.rfile.read(length)
        if len(body) < length:
            raise Refusal(400, f"the body has {len(body):,} bytes, not the {length:,} of its Content-Length")
        try:
            request = json.loads(body.decode("utf-8"))
        except UnicodeDecodeError as error:
            raise Refusal(400, f"the body is not UTF-8 (byte {error.start:,})") from None
        except (ValueError, RecursionError) as error:
            raise Refusal(400, f"the body is not JSON: {shown(error, 80)}") from None
        if not isinstance(request, dict):
            raise Refusal(400, f"the body must be a JSON object, got {type(request).__name__}")
        return request

    def answer(self, path: str, request: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        """The JSON answer of `POST path` (`None`: no such request); `Refusal` or `ValueError` (400) if it is not
        one this server takes."""
        try:
            if path == "/api/encode":
                sentences = request.get("sentences")
                if not isinstance(sentences, list) or not 0 < len(sentences) <= MAX_SENTENCES:
                    raise ValueError(f'"sentences" must be a list of 1 to {MAX_SENTENCES} sentences')
                encoded = self.encode([self._sentence(s, i) for i, s in enumerate(sentences)])
                return {"num_bits": self.model.num_bits, "predictions": [e.to_dict() for e in encoded]}
            if path == "/api/diff":
                from bitcode_allennlp.bits.diff import diff_codes

                for key in ("a", "b"):
                    if not isinstance(request.get(key), str):
                        raise ValueError(f'"{key}" must be a string (a sentence), got '
                                         f"{type(request.get(key)).__name__ if key in request else 'nothing'}")
                a, b = self.encode([request["a"], request["b"]])
                pairs = diff_codes(a.words, a.codes, b.words, b.codes, self.model.num_bits).pairs
                return {"num_bits": self.model.num_bits, "a": a.to_dict(), "b": b.to_dict(),
                        "pairs": [[p.index_a, p.index_b, p.differing] for p in pairs]}
        except ValueError as error:
            raise Refusal(400, shown(error, 300)) from None
        return None

    @staticmethod
    def _sentence(value: Any, index: int) -> Any:
        """`value` when it is a sentence as `encode` takes it (`api.sentence_input`: a text or a list of words),
        checked before its words and characters are counted; else `ValueError` naming `"sentences"[index]`."""
        from bitcode_allennlp.api import sentence_input

        try:
            sentence_input(value, index)
        except TypeError as error:
            raise ValueError(f'"sentences"[{index}]: {error}') from None
        return value

    def encode(self, sentences: List[Any]) -> List[Any]:
        """`model.encode` of checked sentences (texts or lists of words) within the bounds of the module docstring:
        `Refusal` 413 over them (before any tensor is built), 503 when `MAX_PENDING_ENCODES` are running or waiting;
        batches of at most `MAX_SENTENCE_WORDS` padded words, one at a time (`lock`)."""
        characters = sum(len(s) if isinstance(s, str) else sum(len(word) for word in s) for s in sentences)
        if characters > MAX_CHARACTERS:
            raise Refusal(413, f"the request has {characters:,} characters, over the limit of {MAX_CHARACTERS:,}: "
                               "send fewer or shorter sentences")
        if not self.encode_slots.acquire(blocking=False):
            raise Refusal(503, f"{MAX_PENDING_ENCODES} requests are being encoded: try again in a moment",
                          {"Retry-After": "1"})
        try:
            with self.lock:
                counts = [self._num_words(sentence) for sentence in sentences]
                for index, count in enumerate(counts):
                    if count > MAX_SENTENCE_WORDS:
                        raise Refusal(413, f"sentence {index} has {count:,} words, over the limit of "
                                           f"{MAX_SENTENCE_WORDS:,} per sentence: split it")
                if sum(counts) > MAX_WORDS:
                    raise Refusal(413, f"the request has {sum(counts):,} words, over the limit of {MAX_WORDS:,}: "
                                       "send fewer sentences")
                encoded: List[Any] = []
                for start, stop in cost_batches(counts):
                    encoded.extend(self.model.encode(sentences[start:stop], batch_size=stop - start))
                return encoded
        finally:
            self.encode_slots.release()

    def _num_words(self, sentence: Any) -> int:
        """A sentence's words: a list's length, a text's as the predictor splits it (`CodesPredictor.words`, which
        checks it too), or its characters (a bound) for a predictor without `words`."""
        if not isinstance(sentence, str):
            return len(sentence)
        words = getattr(self.model.predictor, "words", None)
        return len(words({"sentence": sentence})) if words is not None else len(sentence)

    # ---------------------------------------------------------------------------------------------- sending
    def _start(self, status: int, content_type: str, length: int, headers: Optional[Dict[str, str]] = None) -> None:
        self._status = status
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(length))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        self.send_header("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Connection", "close")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()

    def _send_json(self, status: int, value: Any, headers: Optional[Dict[str, str]] = None) -> None:
        body = json.dumps(value, ensure_ascii=False).encode("utf-8")
        self._start(status, "application/json; charset=utf-8", len(body), headers)
        if self.command != "HEAD":
            self.wfile.write(body)

    def _refuse(self, status: int, message: str, headers: Optional[Dict[str, str]] = None) -> None:
        self.log_error("%d %s", status, message)
        self.close_connection = True
        self._refused = True
        self._send_json(status, {"error": message}, headers)

    def finish(self) -> None:
        super().finish()
        if getattr(self, "_refused", False):  # the client may still be sending what was refused unread
            linger(self.connection)

    def send_error(self, code: int, message: Optional[str] = None, explain: Optional[str] = None) -> None:
        """`http.server`'s errors (a request line or headers it cannot parse) as ours: JSON, one console line."""
        self._refuse(code, shown(message or self.responses.get(code, ("error",))[0], 200))

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        pass  # quiet: the console shows the URL, and one line per refused request (`log_error`)

    def log_error(self, format: str, *args: Any) -> None:  # noqa: A002
        print(f"explorer: {self.client_address[0]} {shown(self.requestline, 100) or '(no request line)'}: "
              f"{shown(format % args, 300)}", file=sys.stderr, flush=True)


class ExplorerServer(ThreadingHTTPServer):
    """A thread per connection, at most `max_connections` at once; an error in a handler is one console line."""

    daemon_threads = True
    allow_reuse_port = False  # no second process on our port (Python >= 3.11 reads this)
    allow_reuse_address = os.name != "nt"  # on Windows SO_REUSEADDR would let a socket take a port in use

    def __init__(self, address: Tuple[str, int], handler: Any, max_connections: int = MAX_CONNECTIONS) -> None:
        self.connections = threading.BoundedSemaphore(max_connections)
        self.max_connections = max_connections
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.connections.acquire(blocking=False):
            try:
                body = json.dumps({"error": f"{self.max_connections} connections are open: try again"}).encode()
                request.settimeout(1.0)
                request.sendall(b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                                b"Retry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s"
                                % (len(body), body))
            except OSError:
                pass
            linger(request, 0.25)  # on the accepting thread: briefly
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.connections.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.connections.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line for an exception that left a handler (`socketserver`'s default prints its traceback)."""
        error = sys.exc_info()[1]
        print(f"explorer: {shown(client_address[0] if client_address else '?')}: "
              f"{type(error).__name__}: {shown(error, 300)}", file=sys.stderr, flush=True)
        print_debug_traceback()


def make_server(folder: str, archive: str, port: int = 8000, threads: Optional[int] = None) -> ThreadingHTTPServer:
    """The server of `folder` with `archive` loaded (port 0: any free port; `server.server_address` says which).
    It binds 127.0.0.1 first, so a port in use raises `OSError` (EADDRINUSE) before the archive loads."""
    import bitcode_allennlp

    handler = type("Handler", (ExplorerHandler,), {"lock": threading.Lock(),
                                                   "encode_slots": threading.BoundedSemaphore(MAX_PENDING_ENCODES)})
    server = ExplorerServer(("127.0.0.1", port), partial(handler, directory=os.path.realpath(folder)))
    try:
        handler.model = bitcode_allennlp.load(archive, threads=threads)
    except BaseException:
        server.server_close()
        raise
    return server


def serve(folder: str, archive: str, port: int = 8000, threads: Optional[int] = None) -> None:
    """Serves until Ctrl-C (the `allennlp` command's one line, status 130) or SIGTERM (one line, status 0: the way a
    service is stopped; AllenNLP's handler raises `SigTermReceived`)."""
    import sys

    server = None
    try:  # loading and the address line inside: a SIGTERM at any point stops the server with one line
        server = make_server(folder, archive, port, threads)
        print(f"the explorer of {folder} with {archive}: http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C "
              "stops)", flush=True)
        server.serve_forever()
    except Exception as error:
        if type(error).__name__ != "SigTermReceived":
            raise
        print(f"the explorer server of {folder} stopped (SIGTERM)", file=sys.stderr, flush=True)
    finally:
        if server is not None:
            server.server_close()
