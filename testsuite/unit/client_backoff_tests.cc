// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_client/backoff.h"

#include <catch2/catch.hpp>

using namespace k8s_cons_tres::k8s;
using namespace std::chrono;
using ms = milliseconds;

TEST_CASE("backoff doubles from 0.8 s and caps at 30 s", "[backoff]") {
    Backoff b(Backoff::Params{}, [] { return 0.0; });
    auto t = Backoff::Clock::time_point{} + hours(1);
    std::vector<long> seen;
    for (int i = 0; i < 8; ++i)
        seen.push_back(b.next(t + seconds(i)).count());
    CHECK(seen == std::vector<long>{800, 1600, 3200, 6400, 12800, 25600, 30000, 30000});
}

TEST_CASE("jitter stretches the delay but never beyond the cap", "[backoff]") {
    double r = 0.5;
    Backoff b(Backoff::Params{}, [&] { return r; });
    auto t = Backoff::Clock::time_point{} + hours(1);
    CHECK(b.next(t) == ms(1200));         // 800 * 1.5
    r = 0.999;
    CHECK(b.next(t) == ms(3198));         // 1600 * 1.999
    for (int i = 0; i < 10; ++i)
        CHECK(b.next(t) <= ms(30000));
}

TEST_CASE("backoff restarts after a quiet period or an explicit reset", "[backoff]") {
    Backoff b(Backoff::Params{}, [] { return 0.0; });
    auto t = Backoff::Clock::time_point{} + hours(1);
    b.next(t);
    b.next(t);
    CHECK(b.next(t) == ms(3200));
    CHECK(b.next(t + minutes(3)) == ms(800));  // > 2 min since the last failure
    b.next(t + minutes(3));
    b.reset();
    CHECK(b.next(t + minutes(3)) == ms(800));
}

TEST_CASE("default random source stays in range", "[backoff]") {
    Backoff b;
    auto t = Backoff::Clock::now();
    auto d = b.next(t);
    CHECK(d >= ms(800));
    CHECK(d <= ms(1600));
}
