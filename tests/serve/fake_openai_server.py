#!/usr/bin/env python3
"""A fake OpenAI-compatible server for quip's tests (standard library only).

    fake_openai_server.py PORT_FILE LOG_FILE

Listens on a free loopback port, writes the port to PORT_FILE, and answers
POST /v1/chat/completions with canned event streams. Each request is
appended to LOG_FILE as one JSON line: {"path", "authorization", "body"}.
The requested "model" picks the answer:

    (anything else)  "Hello, world! (N messages)" in pieces, then usage
    think            reasoning_content pieces, then the answer
    length           a piece, finish_reason "length"
    error500         HTTP 500 with OpenAI's error body
    error401         HTTP 401 with OpenAI's error body
    malformed        an event that is not JSON
    cut              a piece, then the connection closes
    slow             a piece, then nothing for 60 s
    json             a whole chat.completion object, not a stream
    endless          pieces every 50 ms for 60 s
"""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG_LOCK = threading.Lock()


def chunk(delta, finish=None):
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "fake",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


class Handler(BaseHTTPRequestHandler):
    log_file = None

    def log_message(self, *args):  # quiet
        pass

    def send_events(self, events, pause=0.0):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for e in events:
            data = e if isinstance(e, str) else json.dumps(e)
            # CRLF and LF alike, and a keep-alive comment: a real server's variety.
            self.wfile.write(b": keep-alive\r\n\r\n" if data == ":" else ("data: " + data + "\n\n").encode())
            self.wfile.flush()
            if pause:
                time.sleep(pause)

    def send_error_json(self, status, message, kind):
        body = json.dumps({"error": {"message": message, "type": kind, "code": None}}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        with LOG_LOCK, open(self.log_file, "a") as log:
            log.write(json.dumps({"path": self.path,
                                  "authorization": self.headers.get("Authorization", ""),
                                  "body": body}) + "\n")
        if self.path != "/v1/chat/completions" or not isinstance(body, dict):
            self.send_error_json(404, "no such route: " + self.path, "invalid_request_error")
            return
        model = body.get("model", "")
        n = len(body.get("messages", []))
        usage = {"prompt_tokens": 10 * n, "completion_tokens": 4, "total_tokens": 10 * n + 4,
                 "prompt_tokens_details": {"cached_tokens": 10 * (n - 1)}}
        try:
            if model == "error500":
                self.send_error_json(500, "the model crashed\nbadly", "server_error")
            elif model == "error401":
                self.send_error_json(401, "Incorrect API key provided", "invalid_request_error")
            elif model == "malformed":
                self.send_events([chunk({"content": "Hi"}), "{not json"])
            elif model == "cut":
                self.send_events([chunk({"content": "Hi"})])
            elif model == "slow":
                self.send_events([chunk({"content": "Hi"})])
                time.sleep(60)
            elif model == "length":
                self.send_events([chunk({"content": "Hel"}), chunk({}, "length"),
                                  {"choices": [], "usage": usage}, "[DONE]"])
            elif model == "think":
                self.send_events([chunk({"role": "assistant", "content": None}),
                                  chunk({"reasoning_content": "Let me "}),
                                  chunk({"reasoning_content": "think."}),
                                  chunk({"content": "Two."}), chunk({}, "stop"),
                                  {"choices": [], "usage": usage}, "[DONE]"])
            elif model == "json":
                body = json.dumps({"object": "chat.completion", "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": "Whole answer."},
                     "finish_reason": "stop"}], "usage": usage}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            elif model == "endless":
                self.send_events([chunk({"content": "tick "})] * 1200, pause=0.05)
            else:
                text = "Hello, world! (%d messages)" % n
                pieces = [text[i:i + 3] for i in range(0, len(text), 3)]
                events = [chunk({"role": "assistant", "content": ""})]
                events += [chunk({"content": p}) for p in pieces[:2]] + [":"]
                events += [chunk({"content": p}) for p in pieces[2:]]
                events += [chunk({}, "stop"), {"choices": [], "usage": usage}, "[DONE]"]
                self.send_events(events)
        except (BrokenPipeError, ConnectionResetError):
            pass


def main():
    port_file, log_file = sys.argv[1], sys.argv[2]
    Handler.log_file = log_file
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
