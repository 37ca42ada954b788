#!/usr/bin/env python3
"""A client of `quip serve` for its tests, on the standard library alone
(and OpenAI's `openai` package where it is installed).

Each command prints one JSON object on stdout and exits 0, or prints what
was wrong on stderr and exits 1. The protocol checks are OpenAI's and
Ollama's documented framing: server-sent events `data: {json}` separated by
blank lines (or comments, `:...`) and ending with `data: [DONE]`; NDJSON objects ending with
`"done": true`.

  chat BASE MODEL PROMPT N [stream]     OpenAI chat, the answer and usage
  messages BASE MODEL JSON N            OpenAI chat with these messages
  ollama BASE MODEL PROMPT N [stream]   Ollama /api/chat
  generate BASE MODEL PROMPT N          Ollama /api/generate, streamed
  openai BASE MODEL PROMPT N [LONG]     the openai package (skipped: {"skipped": true});
                                        with LONG, that prompt streamed too
  disconnect BASE MODEL PROMPT          streams, reads one token, hangs up
  hang-up-in-prompt BASE MODEL PROMPT   streams, hangs up after the role chunk
  fuzz BASE COUNT SEED                  malformed bodies to every POST route
  concurrent BASE MODEL N PROMPT...     one streaming chat per prompt, at once
  other-version-server SOCKET           an attach server of no protocol version on
                                        SOCKET: each call gets a failure (until killed)
"""
import http.client
import json
import random
import sys
import threading
import urllib.parse


def fail(message):
    print(message, file=sys.stderr)
    sys.exit(1)


def connect(base):
    u = urllib.parse.urlparse(base)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=120)


def post(base, path, body, raw=False):
    c = connect(base)
    data = body if raw else json.dumps(body).encode()
    c.request("POST", path, body=data, headers={"Content-Type": "application/json"})
    return c, c.getresponse()


def read_sse(resp):
    """The JSON events of an SSE stream, checking its framing."""
    events, done = [], False
    buf = b""
    while True:
        chunk = resp.read(1)
        if not chunk:
            break
        buf += chunk
        while b"\n\n" in buf:
            block, buf = buf.split(b"\n\n", 1)
            line = block.decode()
            if done:
                fail("an event after [DONE]: %r" % line)
            if line.startswith(":"):
                continue  # a comment: the server probing a long prompt's client
            if not line.startswith("data: "):
                fail("an SSE block that is not 'data: ...': %r" % line)
            payload = line[len("data: "):]
            if payload == "[DONE]":
                done = True
                continue
            events.append(json.loads(payload))
    if buf.strip():
        fail("bytes after the last event: %r" % buf)
    if not done:
        fail("the stream did not end with data: [DONE]")
    return events


def chat(base, model, messages, n, stream):
    body = {"model": model, "messages": messages, "max_tokens": n, "temperature": 0}
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    _, r = post(base, "/v1/chat/completions", body)
    if r.status != 200:
        fail("status %d: %s" % (r.status, r.read()))
    if not stream:
        j = json.loads(r.read())
        if j["object"] != "chat.completion":
            fail("object %r" % j["object"])
        choice = j["choices"][0]
        return {"text": choice["message"]["content"], "finish_reason": choice["finish_reason"],
                "usage": j["usage"]}
    if not r.getheader("Content-Type", "").startswith("text/event-stream"):
        fail("content type %r" % r.getheader("Content-Type"))
    events = read_sse(r)
    text, finish, usage = "", None, None
    for i, e in enumerate(events):
        if e["object"] != "chat.completion.chunk":
            fail("chunk object %r" % e["object"])
        if e.get("usage"):
            if e["choices"] != [] or i != len(events) - 1:
                fail("the usage chunk must be last, with no choices")
            usage = e["usage"]
            continue
        delta = e["choices"][0]["delta"]
        if i == 0 and delta.get("role") != "assistant":
            fail("the first chunk does not carry the role")
        if finish is not None:
            fail("a chunk after the finish_reason")
        text += delta.get("content", "") or ""
        finish = e["choices"][0]["finish_reason"]
    if finish is None or usage is None:
        fail("no finish_reason or no usage chunk")
    return {"text": text, "finish_reason": finish, "usage": usage, "events": len(events)}


def ollama(base, model, prompt, n, stream):
    body = {"model": model, "messages": [{"role": "user", "content": prompt}],
            "options": {"num_predict": n, "temperature": 0}, "stream": stream}
    _, r = post(base, "/api/chat", body)
    if r.status != 200:
        fail("status %d: %s" % (r.status, r.read()))
    lines = [json.loads(l) for l in r.read().decode().splitlines() if l.strip()]
    if not lines or not lines[-1]["done"] or any(l["done"] for l in lines[:-1]):
        fail("the last object, and only it, must have done: true")
    if stream != (len(lines) > 1):
        fail("%d objects for stream=%s" % (len(lines), stream))
    last = lines[-1]
    for key in ("total_duration", "load_duration", "prompt_eval_count", "eval_count",
                "eval_duration", "done_reason", "created_at", "model"):
        if key not in last:
            fail("the final object has no %s" % key)
    text = "".join(l["message"]["content"] for l in lines)
    return {"text": text, "done_reason": last["done_reason"], "eval_count": last["eval_count"],
            "objects": len(lines)}


def generate(base, model, prompt, n):
    _, r = post(base, "/api/generate", {"model": model, "prompt": prompt,
                                         "options": {"num_predict": n}})
    lines = [json.loads(l) for l in r.read().decode().splitlines() if l.strip()]
    if r.status != 200 or not lines[-1]["done"]:
        fail("status %d, %r" % (r.status, lines[-1:]))
    return {"text": "".join(l["response"] for l in lines), "objects": len(lines)}


def with_openai(base, model, prompt, n, long_prompt=None):
    try:
        import openai  # noqa: F401
    except ImportError:
        return {"skipped": True}
    client = openai.OpenAI(base_url=base + "/v1", api_key="none")
    r = client.chat.completions.create(model=model, max_tokens=n, temperature=0,
                                       messages=[{"role": "user", "content": prompt}])
    text = ""
    for chunk in client.chat.completions.create(
            model=model, max_tokens=n, temperature=0, stream=True,
            messages=[{"role": "user", "content": prompt}]):
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
    out = {"text": r.choices[0].message.content, "streamed": text,
           "cached_tokens": r.usage.prompt_tokens_details.cached_tokens}
    if long_prompt:
        # A prompt of several batches: its stream carries SSE comments.
        out["long_streamed"] = "".join(
            chunk.choices[0].delta.content or ""
            for chunk in client.chat.completions.create(
                model=model, max_tokens=n, temperature=0, stream=True,
                messages=[{"role": "user", "content": long_prompt}])
            if chunk.choices)
    return out


def disconnect(base, model, prompt):
    c, r = post(base, "/v1/chat/completions", {
        "model": model, "messages": [{"role": "user", "content": prompt}],
        "stream": True, "max_tokens": 100000, "temperature": 0})
    events = 0
    while events < 2:  # the role chunk and one token (comments are not events)
        line = r.readline()
        events += line.startswith(b"data: ")
    c.sock.close()
    return {"events": events}


def hang_up_in_prompt(base, model, prompt):
    # Hangs up once the role chunk came, while the server evaluates the prompt.
    c, r = post(base, "/v1/chat/completions", {
        "model": model, "messages": [{"role": "user", "content": prompt}],
        "stream": True, "max_tokens": 100000, "temperature": 0})
    if r.status != 200:
        fail("status %d: %s" % (r.status, r.read().decode(errors="replace")))
    while True:
        line = r.readline()
        if not line:
            fail("the stream ended before the role chunk")
        if line.startswith(b"data: "):
            break
    c.sock.close()
    return {}


def mutate(rng, body):
    s = bytearray(json.dumps(body).encode())
    for _ in range(rng.randint(1, 6)):
        op = rng.randint(0, 4)
        if op == 0 and s:
            del s[rng.randrange(len(s))]
        elif op == 1:
            s.insert(rng.randint(0, len(s)), rng.randrange(256))
        elif op == 2 and s:
            s[rng.randrange(len(s))] = rng.choice(b'{}[]":,0-e\\ntf\x00\xff')
        elif op == 3:
            s = s[:rng.randint(0, len(s))]
        else:
            i = rng.randint(0, len(s))
            s[i:i] = rng.choice([b'null', b'1e999', b'"\\ud800"', b'[[[[[[', b'-0', b'{"a":'])
    return bytes(s)


def fuzz(base, count, seed):
    rng = random.Random(seed)
    msg = [{"role": "user", "content": "Hi"}]
    seeds = [
        ("/v1/chat/completions", {"messages": msg, "max_tokens": 2, "stop": ["x"], "seed": 1}),
        ("/v1/chat/completions", {"messages": msg, "max_tokens": 2, "stream": True,
                                  "response_format": {"type": "json_object"}}),
        ("/v1/completions", {"prompt": "Hi", "max_tokens": 2}),
        ("/api/chat", {"model": "m", "messages": msg, "stream": False,
                       "options": {"num_predict": 2}}),
        ("/api/generate", {"model": "m", "prompt": "Hi", "options": {"num_predict": 2}}),
        ("/api/show", {"model": "m"}),
    ]
    statuses = {}
    for i in range(count):
        path, body = rng.choice(seeds)
        data = mutate(rng, body)
        try:
            _, r = post(base, path, data, raw=True)
            payload = r.read()
        except (ConnectionError, http.client.HTTPException) as e:
            fail("request %d to %s failed: %r (body %r)" % (i, path, e, data))
        statuses[r.status] = statuses.get(r.status, 0) + 1
        if r.status >= 500:
            fail("status %d for %r to %s: %r" % (r.status, data, path, payload[:300]))
    c = connect(base)
    c.request("GET", "/health")
    if c.getresponse().status != 200:
        fail("the server is not healthy after the fuzzed bodies")
    return {"statuses": {str(k): v for k, v in sorted(statuses.items())}}


def concurrent(base, model, n, prompts):
    results = [None] * len(prompts)

    def one(i):
        try:
            results[i] = chat(base, model, [{"role": "user", "content": prompts[i]}], n, True)
        except SystemExit:
            results[i] = {"error": True}

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(prompts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"results": results}


def other_version_server(path):
    import http.server
    import socketserver

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = b'{"call": 1}\n{"failure": {"kind": "runtime", "message": "misread"}}\n'
            self.send_response(200)  # and no Quip-Attach-Protocol header
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    class Server(socketserver.UnixStreamServer):
        def get_request(self):
            request, _ = super().get_request()
            return request, ("local", 0)  # BaseHTTPRequestHandler wants a host and port

    with Server(path, Handler) as s:
        s.serve_forever()


def main(argv):
    cmd, base = argv[1], argv[2]
    if cmd == "chat":
        out = chat(base, argv[3], [{"role": "user", "content": argv[4]}], int(argv[5]),
                   len(argv) > 6 and argv[6] == "stream")
    elif cmd == "messages":
        out = chat(base, argv[3], json.loads(argv[4]), int(argv[5]), False)
    elif cmd == "ollama":
        out = ollama(base, argv[3], argv[4], int(argv[5]), len(argv) > 6 and argv[6] == "stream")
    elif cmd == "generate":
        out = generate(base, argv[3], argv[4], int(argv[5]))
    elif cmd == "openai":
        out = with_openai(base, argv[3], argv[4], int(argv[5]), argv[6] if len(argv) > 6 else None)
    elif cmd == "disconnect":
        out = disconnect(base, argv[3], argv[4])
    elif cmd == "hang-up-in-prompt":
        out = hang_up_in_prompt(base, argv[3], argv[4])
    elif cmd == "fuzz":
        out = fuzz(base, int(argv[3]), int(argv[4]))
    elif cmd == "other-version-server":
        other_version_server(argv[2])
    elif cmd == "concurrent":
        out = concurrent(base, argv[3], int(argv[4]), argv[5:])
    else:
        fail("unknown command " + cmd)
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv)
