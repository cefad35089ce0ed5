"""A local RFC 3161 timestamp authority: ``openssl ts -reply`` behind a small HTTP server on
127.0.0.1, its TSA certificate issued by the test's evaluation CA."""

from __future__ import annotations

import subprocess
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization

from mcp.governance.signing.keys import issue_certificate, read_identity

TSA_CONFIG = """\
[ tsa ]
default_tsa = tsa_config
[ tsa_config ]
dir = {dir}
serial = {dir}/serial
crypto_device = builtin
signer_cert = {dir}/tsa.pem
signer_key = {dir}/tsa.key
signer_digest = sha256
default_policy = 1.3.6.1.4.1.55555.1
digests = sha256, sha384, sha512
accuracy = secs:1
ordering = yes
tsa_name = yes
ess_cert_id_chain = no
ess_cert_id_alg = sha256
"""


class LocalTSA:
    """Answers POSTed TimeStampReqs with ``openssl ts -reply``; ``url`` is where to send them."""

    def __init__(self, folder: Path, pki_files, openssl: str) -> None:
        self.folder, self.openssl = folder, openssl
        self._write_files(pki_files)
        self.num_requests = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/tsa"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _write_files(self, pki_files) -> None:
        tsa = issue_certificate("MCP 2026 test TSA", read_identity(pki_files), purpose="timestamping")
        (self.folder / "tsa.key").write_bytes(tsa.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        (self.folder / "tsa.pem").write_bytes(tsa.certificate.public_bytes(serialization.Encoding.PEM))
        (self.folder / "ca.pem").write_bytes(pki_files.ca_cert.read_bytes())
        (self.folder / "serial").write_text("01\n")
        (self.folder / "tsa.cnf").write_text(TSA_CONFIG.format(dir=self.folder))

    def reply(self, query: bytes) -> bytes:
        with tempfile.TemporaryDirectory(dir=self.folder) as scratch:
            request, response = Path(scratch) / "q.tsq", Path(scratch) / "r.tsr"
            request.write_bytes(query)
            subprocess.run([self.openssl, "ts", "-reply", "-config", str(self.folder / "tsa.cnf"), "-queryfile",
                            str(request), "-out", str(response)], check=True, capture_output=True)
            return response.read_bytes()

    def _handler(self):
        tsa = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                query = self.rfile.read(int(self.headers["Content-Length"]))
                tsa.num_requests += 1
                body = tsa.reply(query)
                self.send_response(200)
                self.send_header("Content-Type", "application/timestamp-reply")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        return Handler

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def tsa(pki, tmp_path, openssl):
    folder = tmp_path / "tsa"
    folder.mkdir()
    authority = LocalTSA(folder, pki[0], openssl)
    yield authority
    authority.close()
