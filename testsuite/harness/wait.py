# SPDX-License-Identifier: GPL-2.0-or-later
"""Waiting on states with a bounded timeout: the only way tests wait."""
import time


class WaitTimeout(AssertionError):
    pass


def wait_for(predicate, timeout: float, what: str, interval: float = 0.1, on_timeout=None):
    """Poll predicate() until it returns a truthy value; return that value.
    Raises WaitTimeout naming `what` (plus on_timeout()'s text) after timeout s."""
    deadline = time.monotonic() + timeout
    delay = interval
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            extra = ""
            if on_timeout is not None:
                try:
                    extra = "\n" + str(on_timeout())
                except Exception as e:  # diagnostics must not hide the timeout
                    extra = f"\n(diagnostics failed: {e})"
            raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {what}{extra}")
        time.sleep(delay)
        delay = min(delay * 1.5, 1.0)
