# SPDX-License-Identifier: GPL-2.0-or-later
"""ktas: a Kubernetes test API server (standard library only).

It behaves like kube-apiserver for the resource.k8s.io/v1 DRA objects and
the core/v1 Pods and Nodes that the select/k8s_cons_tres plugin and kubectl
use."""
