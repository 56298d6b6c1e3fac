# SPDX-License-Identifier: GPL-2.0-or-later
"""Run directory material: CA and server certificate (openssl CLI), bearer
tokens and the kubeconfig files for clients."""

import ipaddress
import json
import os
import secrets
import subprocess

ROLES = ("admin", "readonly", "noaccess")


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


EC_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
          "-nodes"]


def _signed(rundir, stem, subject, extensions):
    """stem.key + stem.crt signed by the run directory's CA."""
    _openssl("req", "-new", *EC_KEY, "-keyout", f"{stem}.key", "-out",
             f"{stem}.csr", "-subj", subject, cwd=rundir)
    with open(os.path.join(rundir, f"{stem}.ext"), "w") as f:
        f.write(extensions)
    _openssl("x509", "-req", "-in", f"{stem}.csr", "-CA", "ca.crt", "-CAkey",
             "ca.key", "-CAcreateserial", "-out", f"{stem}.crt", "-days",
             "3650", "-extfile", f"{stem}.ext", cwd=rundir)
    for f in (f"{stem}.csr", f"{stem}.ext", "ca.srl"):
        if os.path.exists(os.path.join(rundir, f)):
            os.unlink(os.path.join(rundir, f))
    os.chmod(os.path.join(rundir, f"{stem}.key"), 0o600)


def _have(rundir, stem):
    return all(os.path.exists(os.path.join(rundir, f"{stem}.{ext}"))
               for ext in ("crt", "key"))


def server_san(hosts=()):
    """subjectAltName of the server certificate: 127.0.0.1 and localhost,
    plus every other address or name in hosts (the --host the server
    listens on, e.g. a veth address that another network namespace uses)."""
    names = ["IP:127.0.0.1", "DNS:localhost"]
    for host in hosts:
        if not host or host in ("127.0.0.1", "localhost", "0.0.0.0", "::"):
            continue
        try:
            ipaddress.ip_address(host)
            name = f"IP:{host}"
        except ValueError:
            name = f"DNS:{host}"
        if name not in names:
            names.append(name)
    return ",".join(names)


def ensure_certs(rundir, hosts=()):
    """ca.crt/ca.key, server.crt/server.key (SAN: server_san(hosts)) and
    client-<role>.crt/.key (CN = role, for x509 client authentication).
    Only what is missing is generated; a new CA re-signs everything, and the
    server certificate is made again when it names other hosts (server.san
    records what it names)."""
    san = server_san(hosts)
    san_file = os.path.join(rundir, "server.san")
    try:
        with open(san_file) as f:
            same_san = f.read().strip() == san
    except OSError:
        same_san = san == server_san()  # made before server.san existed
    fresh_ca = not _have(rundir, "ca")
    if fresh_ca:
        _openssl("req", "-x509", *EC_KEY, "-keyout", "ca.key", "-out",
                 "ca.crt", "-days", "3650", "-subj", "/CN=ktas-test-ca",
                 "-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign",
                 cwd=rundir)
        os.chmod(os.path.join(rundir, "ca.key"), 0o600)
    if fresh_ca or not _have(rundir, "server") or not same_san:
        _signed(rundir, "server", "/CN=kube-apiserver",
                f"subjectAltName={san}\n"
                "basicConstraints=CA:FALSE\n"
                "keyUsage=critical,digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=serverAuth\n")
        write_atomic(san_file, san + "\n", 0o644)
    for role in ROLES:
        if fresh_ca or not _have(rundir, f"client-{role}"):
            _signed(rundir, f"client-{role}", f"/O=ktas/CN={role}",
                    "basicConstraints=CA:FALSE\n"
                    "keyUsage=critical,digitalSignature\n"
                    "extendedKeyUsage=clientAuth\n")


def ensure_tokens(rundir):
    path = os.path.join(rundir, "tokens.json")
    if os.path.exists(path):
        with open(path) as f:
            tokens = json.load(f)
        if all(r in tokens for r in ROLES):
            return tokens
    tokens = {r: f"{r}-{secrets.token_hex(16)}" for r in ROLES}
    fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(tokens, f, indent=1)
    os.replace(path + ".tmp", path)
    return tokens


def kubeconfig_text(url, ca_path, user, token, namespace="default",
                    cert=None, key=None):
    cred = (f"client-certificate: {cert}\n    client-key: {key}" if cert
            else f"token: {token}")
    return f"""apiVersion: v1
kind: Config
clusters:
- name: ktas
  cluster:
    server: {url}
    certificate-authority: {ca_path}
users:
- name: {user}
  user:
    {cred}
contexts:
- name: ktas
  context:
    cluster: ktas
    user: {user}
    namespace: {namespace}
current-context: ktas
preferences: {{}}
"""


def write_atomic(path, text, mode=0o600):
    fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def write_kubeconfigs(rundir, url, tokens):
    """RUNDIR/kubeconfig (admin) plus kubeconfig-<role> (bearer token) and
    kubeconfig-cert-<role> (client certificate) for every role."""
    ca = os.path.abspath(os.path.join(rundir, "ca.crt"))
    for role in ROLES:
        text = kubeconfig_text(url, ca, role, tokens[role])
        write_atomic(os.path.join(rundir, f"kubeconfig-{role}"), text)
    write_atomic(os.path.join(rundir, "kubeconfig"),
                 kubeconfig_text(url, ca, "admin", tokens["admin"]))
    for role in ROLES:
        stem = os.path.abspath(os.path.join(rundir, f"client-{role}"))
        write_atomic(os.path.join(rundir, f"kubeconfig-cert-{role}"),
                     kubeconfig_text(url, ca, role, None, cert=stem + ".crt",
                                     key=stem + ".key"))
