// SPDX-License-Identifier: GPL-2.0-or-later
// k8s_cons_tres_start, the plugin's one start-up call, wires the engine to the
// EngineFeed explicitly (k8s_sync/start.cc): a configuration the feed
// cannot use fails the start with the feed's own reason.
#include "core/k8s_cons_tres.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

TEST_CASE("k8s_cons_tres_start hands the engine the Kubernetes feed") {
    char path[] = "/tmp/k8s_cons_tres_start_XXXXXX";
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    std::ofstream(path) << "Kubeconfig=/nonexistent/k8s_cons_tres-test/kubeconfig\n";
    k8s_cons_tres_start_args args{path, nullptr, "testcluster", nullptr, 0};
    char err[512] = "";
    CHECK(k8s_cons_tres_start(&args, err, sizeof err) == K8S_CONS_TRES_EINVAL);
    // the feed's reason (it read the kubeconfig), not "no Kubernetes client"
    CHECK(std::string(err).find("/nonexistent/k8s_cons_tres-test/kubeconfig") != std::string::npos);
    CHECK(k8s_cons_tres_running() == 0);
    std::remove(path);
}
