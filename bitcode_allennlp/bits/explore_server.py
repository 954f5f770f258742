"""`allennlp bits explore ... --serve`: the explorer's folder on localhost, with the archive behind it.

Where this sits: `bits/explore.py` writes the folder; this serves it (standard library `http.server`, bound to
127.0.0.1) and answers two JSON requests with the archive loaded once by `bitcode_allennlp.load` (`api.CodeModel`,
whose `encode` is what `allennlp predict` writes):

* `POST /api/encode` `{"sentences": [text or [words], ...]}` -> `{"num_bits": K, "predictions": [...]}`, each
  prediction `Encoded.to_dict()` (words, codes, bits, tags / entities / tree);
* `POST /api/diff` `{"a": text, "b": text}` -> both predictions and the aligned pairs of `bits.diff.diff_codes`
  (`[index_a, index_b, differing heads]`), as `allennlp bits diff ARCHIVE A B` aligns them;
* `GET /api/info` -> `{"archive", "task", "num_bits"}` (the page shows its typing box when this answers).
"""
import json
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, Optional

MAX_REQUEST_BYTES = 1_000_000
MAX_SENTENCES = 64


class ExplorerHandler(SimpleHTTPRequestHandler):
    """Files of the explorer's folder, and the `/api/` requests (module docstring)."""

    model: Any = None
    lock = threading.Lock()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        pass  # quiet: the console shows the URL only

    def _send_json(self, status: int, value: Any) -> None:
        body = json.dumps(value, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if self.path == "/api/info":
            model = self.model
            self._send_json(200, {"archive": model.archive, "task": model.task, "num_bits": model.num_bits})
            return
        super().do_GET()

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_REQUEST_BYTES:
            self._send_json(413, {"error": f"request over {MAX_REQUEST_BYTES:,} bytes"})
            return
        try:
            request = json.loads(self.rfile.read(length).decode("utf-8") or "{}")
            answer = self.answer(self.path, request)
        except (ValueError, TypeError, KeyError) as error:
            self._send_json(400, {"error": str(error)})
            return
        if answer is None:
            self._send_json(404, {"error": f"no such request: {self.path}"})
        else:
            self._send_json(200, answer)

    def answer(self, path: str, request: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        if path == "/api/encode":
            sentences = request["sentences"]
            if not isinstance(sentences, list) or not 0 < len(sentences) <= MAX_SENTENCES:
                raise ValueError(f'"sentences" must be a list of 1 to {MAX_SENTENCES} sentences')
            with self.lock:
                encoded = self.model.encode(list(sentences))
            return {"num_bits": self.model.num_bits, "predictions": [e.to_dict() for e in encoded]}
        if path == "/api/diff":
            from bitcode_allennlp.bits.diff import diff_codes

            with self.lock:
                a, b = self.model.encode([str(request["a"]), str(request["b"])])
            pairs = diff_codes(a.words, a.codes, b.words, b.codes, self.model.num_bits).pairs
            return {"num_bits": self.model.num_bits, "a": a.to_dict(), "b": b.to_dict(),
                    "pairs": [[p.index_a, p.index_b, p.differing] for p in pairs]}
        return None


def make_server(folder: str, archive: str, port: int = 8000, threads: Optional[int] = None) -> ThreadingHTTPServer:
    """The server of `folder` with `archive` loaded (port 0: any free port; `server.server_address` says which)."""
    import bitcode_allennlp

    model = bitcode_allennlp.load(archive, threads=threads)
    handler = type("Handler", (ExplorerHandler,), {"model": model})
    return ThreadingHTTPServer(("127.0.0.1", port), partial(handler, directory=folder))


def serve(folder: str, archive: str, port: int = 8000, threads: Optional[int] = None) -> None:
    """Serves until Ctrl-C."""
    server = make_server(folder, archive, port, threads)
    print(f"the explorer of {folder} with {archive}: http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C stops)",
          flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
