#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Kubernetes test API server for select/k8s_cons_tres: HTTPS + bearer
tokens, resource.k8s.io/v1 ResourceSlices, DeviceClasses and ResourceClaims
(with /status), Pods, Nodes (registered for every node the slices name, and
tainted as the node lifecycle controller does), list/watch/patch semantics of
kube-apiserver, node agents standing in for kubelet, and run-time fault
injection.  See testsuite/apiserver/README.md."""

import argparse
import os
import sys

sys.dont_write_bytecode = True   # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ktas.app import App  # noqa: E402


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--dir", required=True,
                   help="run directory (certificates, tokens, kubeconfig, "
                   "server.json)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0,
                   help="HTTPS port; 0 picks a free one")
    p.add_argument("--seed", action="append", metavar="FILE.json",
                   help='objects to create at start: {"items": [...]}; '
                   "claims keep their status")
    p.add_argument("--history", type=int, default=10000,
                   help="watch events kept; older resourceVersions get 410")
    p.add_argument("--synthetic-nodes", type=int, default=0, metavar="N",
                   help="add N nodes' slices (128-CPU dra.cpu pool + 8 GPUs) "
                   "and their Node objects")
    p.add_argument("--bookmark-interval", type=float, default=5.0,
                   metavar="SECONDS", help="BOOKMARK period on watches")
    p.add_argument("--watch-timeout", type=float, default=1800.0,
                   metavar="SECONDS",
                   help="watch length when timeoutSeconds is not given")
    p.add_argument("--node-agents", action="store_true",
                   help="run a stand-in kubelet + DRA drivers per node that "
                   "slices name: pods there run once their claims are "
                   "reserved for them (GET /_test/nodes/NODE/agent)")
    p.add_argument("--run-image", action="append", default=[], metavar="IMAGE=PATH",
                   help="with --node-agents: run the containers of pods whose images are "
                   "all such IMAGEs as host processes, commands looked up on PATH "
                   "(ktas/containers.py); repeatable")
    p.add_argument("--container-host-env", action="append", default=[], metavar="NAME",
                   help="pass the server's own variable NAME to the containers it runs")
    p.add_argument("--delay-ms", type=int, default=0, metavar="N",
                   help="answer every API request N ms late, as a real API server "
                   "does while etcd commits (5-20 ms a write); kept by /_test/faults/reset")
    p.add_argument("--jitter-ms", type=int, default=0, metavar="J",
                   help="and up to J ms more, at random")
    p.add_argument("--device-taint-rules", choices=("v1beta2", "v1alpha3", "off"),
                   default="v1beta2",
                   help="serve DeviceTaintRules in resource.k8s.io at this version (1.36 "
                   "serves v1beta2, 1.33-1.35 v1alpha3, each behind the DRADeviceTaintRules "
                   "gate), or not at all")
    p.add_argument("--verbose", action="store_true", help="log requests")
    return p.parse_args(argv)


def main(argv=None):
    App(parse_args(argv)).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
