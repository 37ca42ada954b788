#!/usr/bin/env python3
"""A fake Hugging Face hub for quip pull's tests (standard library only).

    fake_hf_hub.py PORT_FILE LOG_FILE CONFIG_FILE

Listens on a free loopback port, writes the port to PORT_FILE, and serves
the hub's routes as the hub documents them and huggingface_hub reads them:

    GET  /api/models/ORG/REPO[/revision/REV][?blobs=true]
         {"id", "sha": COMMIT, "siblings": [{"rfilename", "blobId", "size",
         "lfs": {"sha256", "size", "pointerSize"}}]} (lfs for *.gguf files)
    HEAD/GET /ORG/REPO/resolve/REV/PATH
         an LFS file: 302 to the CDN, with X-Repo-Commit, X-Linked-Etag
         ("SHA256"), X-Linked-Size and the pointer's ETag; another file:
         200 with its ETag (the git blob id) and bytes
    HEAD/GET /cdn/SHA256?...
         the bytes, with Accept-Ranges, ETag and Range requests (206)

Errors as the hub sends them: 404 with X-Error-Code RepoNotFound,
RevisionNotFound or EntryNotFound; 401 for a private repository without
the token (X-Error-Code RepoNotFound) or with a wrong one (X-Error-Message
"Invalid credentials in Authorization header").

CONFIG_FILE is JSON, read again for every request, so a test can change it
between two pulls:

    {"repos": {"ORG/REPO": {"commit": HEX40, "private": false,
                            "files": {"PATH": "/source/file", ...},
                            "gone": ["PATH"],       # listed, but resolve says 404
                            "refs": {"REV": {"commit": HEX40, "files": {...}}}}},
                                    # other branches or tags ("v1", "refs/pr/3")
     "token": "hf_...",         # what a private repository accepts
     "cdn_host": "localhost",   # the CDN's host name in the redirect
     "cut_after": N,            # CDN GETs close the connection after N bytes
     "stall_after": N,          # CDN GETs send N bytes, then nothing for 60 s
     "throttle": N,             # CDN GETs send N bytes every 50 ms
     "stall_api": false,        # the listing comes after 60 s
     "moved": {"ORG/OLD": "ORG/REPO"}  # a renamed repository (307 to the new name)
     "wrong_bytes": false,      # CDN GETs send the bytes with one changed
     "ignore_range": false}     # CDN GETs answer a Range with the whole file

Each request is appended to LOG_FILE as one JSON line: {"method", "path",
"host", "range", "authorization"}.
"""
import hashlib
import json
import os
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG_LOCK = threading.Lock()
HASHES = {}  # (path, size, mtime) -> sha256


def sha256_of(path):
    st = os.stat(path)
    key = (path, st.st_size, st.st_mtime_ns)
    if key not in HASHES:
        with open(path, "rb") as f:
            HASHES[key] = hashlib.sha256(f.read()).hexdigest()
    return HASHES[key]


def git_blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def is_lfs(path):
    return path.endswith(".gguf")


class Handler(BaseHTTPRequestHandler):
    log_file = None
    config_file = None

    def log_message(self, *args):  # quiet
        pass

    def config(self):
        with open(self.config_file) as f:
            return json.load(f)

    def log_request_line(self):
        with LOG_LOCK, open(self.log_file, "a") as log:
            log.write(json.dumps({"method": self.command, "path": self.path,
                                  "host": self.headers.get("Host", ""),
                                  "range": self.headers.get("Range", ""),
                                  "authorization": self.headers.get("Authorization", "")}) + "\n")

    def reply(self, status, headers=(), body=b""):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def error(self, status, code=None, message=None):
        headers = []
        if code:
            headers.append(("X-Error-Code", code))
        if message:
            headers.append(("X-Error-Message", message))
        headers.append(("Content-Type", "application/json"))
        self.reply(status, headers, json.dumps({"error": message or "error"}).encode())

    # The repository named by `org`/`name`, after the token check; None when
    # an error was sent.
    def repo(self, cfg, org, name):
        repo = cfg["repos"].get(org + "/" + name)
        if repo is None:
            self.error(404, "RepoNotFound", "Repository not found")
            return None
        if repo.get("private"):
            auth = self.headers.get("Authorization", "")
            if not auth:
                self.error(401, "RepoNotFound", "Invalid username or password.")
                return None
            if auth != "Bearer " + cfg.get("token", ""):
                self.error(401, None, "Invalid credentials in Authorization header")
                return None
        return repo

    def do_HEAD(self):
        self.handle_any()

    def do_GET(self):
        self.handle_any()

    def handle_any(self):
        self.log_request_line()
        cfg = self.config()
        url = urllib.parse.urlsplit(self.path)
        parts = [urllib.parse.unquote(p) for p in url.path.split("/")[1:]]
        # A renamed repository: its old routes redirect (307, relative).
        moved = cfg.get("moved", {})
        old = None
        if parts[:2] == ["api", "models"] and len(parts) >= 4:
            old = (2, "/".join(parts[2:4]))
        elif len(parts) >= 2:
            old = (0, "/".join(parts[0:2]))
        if old and old[1] in moved:
            at = old[0]
            new = parts[:at] + moved[old[1]].split("/") + parts[at + 2:]
            location = "/" + "/".join(urllib.parse.quote(p) for p in new)
            if url.query:
                location += "?" + url.query
            self.reply(307, [("Location", location)], b"")
            return
        try:
            if parts[:2] == ["api", "models"] and len(parts) == 6 and parts[4] == "revision":
                self.model_info(cfg, parts[2], parts[3], parts[5])
            elif parts[:2] == ["api", "models"] and len(parts) == 4:
                self.model_info(cfg, parts[2], parts[3], "main")
            elif len(parts) >= 5 and parts[2] == "resolve":
                self.resolve(cfg, parts[0], parts[1], parts[3], "/".join(parts[4:]))
            elif len(parts) == 2 and parts[0] == "cdn":
                self.cdn(cfg, parts[1])
            else:
                self.error(404, None, "no such route")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def at_revision(self, cfg, org, name, rev):
        """The repository at `rev` (a ref's name or a commit), or None after a 404."""
        repo = self.repo(cfg, org, name)
        if repo is None:
            return None
        if rev in ("main", repo["commit"]):
            return repo
        for ref, at in repo.get("refs", {}).items():
            if rev in (ref, at["commit"]):
                return dict(repo, commit=at["commit"], files=at["files"], gone=[])
        self.error(404, "RevisionNotFound", "Invalid rev id: " + rev)
        return None

    def model_info(self, cfg, org, name, rev):
        if cfg.get("stall_api"):
            time.sleep(60)
        repo = self.at_revision(cfg, org, name, rev)
        if repo is None:
            return
        siblings = []
        for path, source in repo["files"].items():
            with open(source, "rb") as f:
                data = f.read()
            s = {"rfilename": path, "blobId": git_blob_id(data), "size": len(data)}
            if is_lfs(path):
                s["lfs"] = {"sha256": sha256_of(source), "size": len(data), "pointerSize": 135}
            siblings.append(s)
        body = json.dumps({"_id": "0" * 24, "id": org + "/" + name, "modelId": org + "/" + name,
                           "sha": repo["commit"], "private": bool(repo.get("private")),
                           "siblings": siblings}).encode()
        self.reply(200, [("Content-Type", "application/json")], body)

    def resolve(self, cfg, org, name, rev, path):
        repo = self.at_revision(cfg, org, name, rev)
        if repo is None:
            return
        if path not in repo["files"] or path in repo.get("gone", []):
            self.error(404, "EntryNotFound", "Entry not found")
            return
        source = repo["files"][path]
        with open(source, "rb") as f:
            data = f.read()
        common = [("X-Repo-Commit", repo["commit"]), ("Accept-Ranges", "bytes")]
        if is_lfs(path):
            sha = sha256_of(source)
            port = self.server.server_address[1]
            location = "http://%s:%d/cdn/%s?X-Amz-Signature=abc" % (cfg.get("cdn_host", "127.0.0.1"), port, sha)
            pointer = ("version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n" % (sha, len(data))).encode()
            self.reply(302, common + [("Location", location), ("ETag", '"%s"' % git_blob_id(pointer)),
                                      ("X-Linked-Etag", '"%s"' % sha), ("X-Linked-Size", str(len(data))),
                                      ("Content-Type", "text/plain; charset=utf-8")],
                       ("Found. Redirecting to " + location).encode())
        else:
            self.reply(200, common + [("ETag", '"%s"' % git_blob_id(data))], data)

    def cdn(self, cfg, sha):
        source = None
        for repo in cfg["repos"].values():
            for path, src in repo["files"].items():
                if is_lfs(path) and sha256_of(src) == sha:
                    source = src
        if source is None:
            self.error(404, None, "NoSuchKey")
            return
        with open(source, "rb") as f:
            data = f.read()
        if cfg.get("wrong_bytes"):
            data = bytes([data[0] ^ 1]) + data[1:]
        start = 0
        rng = self.headers.get("Range", "")
        headers = [("ETag", '"%s"' % sha), ("Accept-Ranges", "bytes"),
                   ("Content-Type", "application/octet-stream")]
        status = 200
        if rng.startswith("bytes=") and not cfg.get("ignore_range"):
            first, _, last = rng[len("bytes="):].partition("-")
            start = int(first)
            end = int(last) + 1 if last else len(data)
            if start >= len(data):
                self.reply(416, [("Content-Range", "bytes */%d" % len(data))])
                return
            headers.append(("Content-Range", "bytes %d-%d/%d" % (start, end - 1, len(data))))
            data = data[start:end]
            status = 206
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command == "HEAD":
            return
        if cfg.get("cut_after") is not None:
            self.wfile.write(data[:cfg["cut_after"]])
            self.wfile.flush()
            self.close_connection = True
            return
        if cfg.get("stall_after") is not None:
            self.wfile.write(data[:cfg["stall_after"]])
            self.wfile.flush()
            time.sleep(60)
            return
        if cfg.get("throttle") is not None:
            step = cfg["throttle"]
            for at in range(0, len(data), step):
                self.wfile.write(data[at:at + step])
                self.wfile.flush()
                time.sleep(0.05)
            return
        self.wfile.write(data)


def main():
    port_file, log_file, config_file = sys.argv[1:4]
    Handler.log_file = log_file
    Handler.config_file = config_file
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    tmp = port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
