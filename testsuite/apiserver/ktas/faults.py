# SPDX-License-Identifier: GPL-2.0-or-later
"""Run-time fault injection settings (POST /_test/faults)."""

import random
import threading

SETTINGS = ("refuse", "hang", "status", "retryAfter", "delayMs", "jitterMs", "count",
            "resource", "verb", "expiredAsHttp")
DEFAULTS = {"refuse": False, "hang": False, "status": 0, "retryAfter": None,
            "delayMs": 0, "jitterMs": 0, "count": 0, "resource": "", "verb": "",
            "expiredAsHttp": False}


class Faults:
    """`status` (with `retryAfter`) answers API requests with that code;
    `count` > 0 limits it to the next N matching requests; `resource` and
    `verb` narrow which requests match.  `hang` holds requests until it is
    cleared; `delayMs` slows every answer, `jitterMs` by up to that much
    more, at random; `expiredAsHttp` answers a watch from an expired
    resourceVersion with HTTP 410 instead of a 200 stream holding an ERROR
    event. base_delay_ms and base_jitter_ms (--delay-ms, --jitter-ms) are
    the server's own latency, as a real API server's etcd commit: added to
    every answer, and kept by reset()."""

    def __init__(self, base_delay_ms=0, base_jitter_ms=0):
        self.cond = threading.Condition()
        self.state = dict(DEFAULTS)
        self.stopping = False
        self.base_delay_ms = base_delay_ms
        self.base_jitter_ms = base_jitter_ms

    def update(self, changes):
        with self.cond:
            for key in SETTINGS:
                if key in changes:
                    self.state[key] = changes[key]
            self.state["status"] = int(self.state["status"] or 0)
            self.state["count"] = int(self.state["count"] or 0)
            self.state["delayMs"] = int(self.state["delayMs"] or 0)
            self.state["jitterMs"] = int(self.state["jitterMs"] or 0)
            self.cond.notify_all()
            return dict(self.state)

    def reset(self):
        with self.cond:
            self.state = dict(DEFAULTS)
            self.cond.notify_all()
            return dict(self.state)

    def snapshot(self):
        with self.cond:
            return dict(self.state)

    def take_status(self, resource, verb):
        """The injected status for this request, or None."""
        with self.cond:
            s = self.state
            if not s["status"]:
                return None
            if s["resource"] and s["resource"] != resource:
                return None
            if s["verb"] and s["verb"] != verb:
                return None
            code, retry = s["status"], s["retryAfter"]
            if s["count"] > 0:
                s["count"] -= 1
                if s["count"] == 0:
                    s["status"] = 0
            return code, retry

    def wait_while_hung(self):
        with self.cond:
            while self.state["hang"] and not self.stopping:
                self.cond.wait(1.0)

    def expired_as_http(self):
        with self.cond:
            return bool(self.state["expiredAsHttp"])

    def delay_seconds(self):
        with self.cond:
            fixed = self.state["delayMs"] + self.base_delay_ms
            jitter = self.state["jitterMs"] + self.base_jitter_ms
        return (fixed + (random.uniform(0, jitter) if jitter else 0)) / 1000.0

    def stop(self):
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
