// SPDX-License-Identifier: GPL-2.0-or-later
// Catch2 entry point of the k8s-cons-tres-inspect unit tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
