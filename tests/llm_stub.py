#!/usr/bin/env python3
"""Loopback stub of the two LLM APIs evoeng speaks, for the `net` tests.

  python3 llm_stub.py --port 0 --script tests/data/llm/scenarios.json \
      --scenario NAME [--key KEY] [--max-seconds 60]

Listens on 127.0.0.1, prints "PORT <n>" on stdout, then answers
POST /v1/chat/completions (OpenAI form, needs "Authorization: Bearer KEY")
and POST /v1/messages (Anthropic form, needs "x-api-key: KEY" and an
"anthropic-version" header) with the scenario's scripted answers, in order,
one per request. A wrong or missing key gets 401 and uses no answer; a
malformed request body gets 400. Exits when its stdin reaches EOF (the
parent test closed it or died) or after --max-seconds.

Answer fields (all optional): status (200), delay (seconds before
answering), headers {name: value}, text (the assistant text, wrapped in
the API's reply JSON), text_file (text from a file beside the script),
raw (the body as is), truncate (cut the body to N bytes), pad (a text of
N 'x' characters), echo (the text is the request body as received),
echo_headers (the text is the request's auth headers: tests redaction),
repeat (this answer is used for every later request too).
"""
import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--script", required=True)
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--key", default=None)
    ap.add_argument("--max-seconds", type=float, default=60.0)
    args = ap.parse_args()

    with open(args.script) as f:
        scenarios = json.load(f)
    if args.scenario not in scenarios:
        print("unknown scenario " + args.scenario, file=sys.stderr)
        sys.exit(2)
    answers = scenarios[args.scenario]
    base = os.path.dirname(os.path.abspath(args.script))
    state = {"next": 0}
    lock = threading.Lock()

    def next_answer():
        with lock:
            i = state["next"]
            if i >= len(answers):
                if answers and answers[-1].get("repeat"):
                    return answers[-1]
                return {"status": 500, "raw": '{"error":{"message":"stub: script exhausted"}}'}
            state["next"] = i + 1
            return answers[i]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *a):
            pass

        def reply(self, status, body, headers=None):
            data = body.encode() if isinstance(body, str) else body
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, str(v))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n)
            if self.path == "/v1/chat/completions":
                api = "openai"
                ok = args.key is None or self.headers.get("Authorization") == "Bearer " + args.key
            elif self.path == "/v1/messages":
                api = "anthropic"
                ok = (args.key is None or self.headers.get("x-api-key") == args.key) and \
                    self.headers.get("anthropic-version") is not None
            else:
                return self.reply(404, '{"error":{"message":"stub: no such path"}}')
            if not ok:
                return self.reply(401, '{"error":{"message":"stub: invalid or missing API key"}}')
            try:
                req = json.loads(raw)
                assert isinstance(req.get("model"), str) and req["model"]
                assert isinstance(req.get("messages"), list) and req["messages"]
                if api == "anthropic":
                    assert isinstance(req.get("max_tokens"), int)
            except Exception as e:  # noqa: BLE001
                return self.reply(400, json.dumps({"error": {"message": "stub: bad request: %r" % e}}))

            a = next_answer()
            if a.get("delay"):
                time.sleep(a["delay"])
            if "raw" in a:
                body = a["raw"]
            else:
                if a.get("echo"):
                    text = raw.decode()
                elif a.get("echo_headers"):
                    text = "Authorization: %s\nx-api-key: %s\n" % (self.headers.get("Authorization"),
                                                                    self.headers.get("x-api-key"))
                elif "text_file" in a:
                    with open(os.path.join(base, a["text_file"])) as f:
                        text = f.read()
                elif "pad" in a:
                    text = "x" * a["pad"]
                else:
                    text = a.get("text", "")
                if api == "openai":
                    body = json.dumps({"id": "stub", "object": "chat.completion", "model": req["model"],
                                       "choices": [{"index": 0, "finish_reason": "stop",
                                                    "message": {"role": "assistant", "content": text}}],
                                       "usage": {"prompt_tokens": 123, "completion_tokens": 456}})
                else:
                    body = json.dumps({"id": "stub", "type": "message", "role": "assistant", "model": req["model"],
                                       "content": [{"type": "text", "text": text}],
                                       "stop_reason": "end_turn",
                                       "usage": {"input_tokens": 321, "output_tokens": 654}})
            if "truncate" in a:
                body = body[: a["truncate"]]
            self.reply(a.get("status", 200), body, a.get("headers"))

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print("PORT %d" % server.server_address[1], flush=True)

    def watch_stdin():
        try:
            while sys.stdin.buffer.read(4096):
                pass
        except Exception:  # noqa: BLE001
            pass
        os._exit(0)

    def watch_clock():
        time.sleep(args.max_seconds)
        os._exit(0)

    threading.Thread(target=watch_stdin, daemon=True).start()
    threading.Thread(target=watch_clock, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
