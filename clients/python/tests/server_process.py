"""Runs a real hgeval-server on a free loopback port for the Python tests: the golden
HGRN2 checkpoint as "hgrn2" with the tok512 tokenizer (as tests/server's GoldenServerArgs),
its store in a temporary folder. $HGEVAL_SERVER_BINARY and $HGEVAL_SOURCE_DIR are set by
ctest."""

import os
import signal
import subprocess
import tempfile
import time

import grpc

import hgeval

SOURCE_DIR = os.environ.get(
    "HGEVAL_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "..")
)
SERVER_BINARY = os.environ.get(
    "HGEVAL_SERVER_BINARY", os.path.join(SOURCE_DIR, "build", "server", "hgeval-server")
)


class ServerProcess:
    def __init__(self, extra_args=(), token=None):
        self.dir = tempfile.mkdtemp(prefix="hgeval-python-")
        port_file = os.path.join(self.dir, "port")
        args = [
            SERVER_BINARY,
            "--listen=127.0.0.1:0",
            "--port_file=" + port_file,
            "--model=hgrn2=" + os.path.join(SOURCE_DIR, "tests/golden/hgrn2"),
            "--tokenizer=" + os.path.join(SOURCE_DIR, "data/models/stories260K/tok512.bin"),
            "--data_dir=" + os.path.join(SOURCE_DIR, "data"),
            "--store=" + os.path.join(self.dir, "store.sqlite"),
            "--threads=1",
            "--shutdown_grace_ms=0",
            *extra_args,
        ]
        if token is not None:
            token_file = os.path.join(self.dir, "token")
            with open(token_file, "w") as f:
                f.write(token + "\n")
            args.append("--auth_token_file=" + token_file)
        self.log = open(os.path.join(self.dir, "server.log"), "w")
        self.process = subprocess.Popen(args, stdout=self.log, stderr=self.log)
        deadline = time.time() + 30
        while not os.path.exists(port_file):
            if self.process.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"hgeval-server did not start; see {self.log.name}")
            time.sleep(0.05)
        with open(port_file) as f:
            self.address = "127.0.0.1:" + f.read().strip()
        # Serving once a call is no longer UNAVAILABLE (start-up).
        with hgeval.Client(self.address, token=token) as client:
            while True:
                try:
                    client.models()
                    break
                except hgeval.HgevalError as error:
                    if error.code != grpc.StatusCode.UNAVAILABLE or time.time() > deadline:
                        raise
                    time.sleep(0.05)

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=30)
        self.log.close()
