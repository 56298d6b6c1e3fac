// SPDX-License-Identifier: GPL-2.0-or-later
// Exponential backoff with jitter, modelled on client-go's reflector backoff:
// 0.8 s doubling up to 30 s, back to the start after 2 min without failures.
// A value type; the random source and the clock are injected so tests are exact.
#pragma once

#include <chrono>
#include <functional>
#include <optional>

namespace k8s_cons_tres::k8s {

class Backoff {
public:
    using Clock = std::chrono::steady_clock;
    using Duration = std::chrono::milliseconds;
    // Returns a value in [0, 1).
    using Random = std::function<double()>;

    struct Params {
        Duration initial{800};
        Duration cap{30000};
        double factor = 2.0;
        double jitter = 1.0;         // delay = base * (1 + jitter * random), at most cap
        Duration reset{120000};      // quiet time after which we start again at initial
    };

    Backoff();
    explicit Backoff(Params p, Random random = {});

    // The delay before the next attempt, given a failure at `now`.
    Duration next(Clock::time_point now);
    // Forget past failures (after a success).
    void reset();
    Duration base() const { return base_; }
    const Params &params() const { return p_; }

private:
    Params p_;
    Random random_;
    Duration base_{0};
    std::optional<Clock::time_point> last_;
};

// Default random source: a thread-local PRNG.
double defaultRandom();

}  // namespace k8s_cons_tres::k8s
