#!/usr/bin/python3
"""The tests' throwaway CA and a server certificate it signed, made with the openssl command
(the steps of the scheduler guide's TLS section): P-256 keys, the CA marked as one, the server
certificate for the names of `san` with serverAuth. The one maker for the Python tests, the
soak and, through its command line, the shell tests (tests/e2e/common.bash's make_tls):

    tests/tls_certs.py FOLDER [SAN [DAYS]]   # SAN default DNS:localhost,IP:127.0.0.1; DAYS 2

prints the three paths (ca, cert, key), one a line; exits 1 naming the openssl step that failed.
The unit tests of lib/net make theirs in-process (tests/net/certs.h): they need certificates
not yet valid or expired, which the openssl command cannot make.
"""
import os
import subprocess
import sys

LOOPBACK = "DNS:localhost,IP:127.0.0.1"


def make_certs(folder, san=LOOPBACK, days=2):
    """Makes ca.pem (with ca.key), server.pem and server.key (both keys mode 0600) in folder
    (created if missing), valid for `days` days; returns the paths (ca, cert, key). Raises
    RuntimeError naming the openssl step that failed and its message."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "server.ext"), "w") as f:
        f.write(f"subjectAltName={san}\nextendedKeyUsage=serverAuth\n")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for step in (["req", "-x509", *ec, "-days", str(days), "-subj", "/CN=dbs test CA",
                  "-keyout", "ca.key", "-out", "ca.pem",
                  "-addext", "basicConstraints=critical,CA:TRUE",
                  "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
                 ["req", *ec, "-subj", "/CN=dbs test server", "-keyout", "server.key",
                  "-out", "server.csr"],
                 ["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                  "-CAcreateserial", "-days", str(days), "-extfile", "server.ext",
                  "-out", "server.pem"]):
        run = subprocess.run(["openssl", *step], cwd=folder, capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError(f"openssl {' '.join(step)}: {run.stderr.strip()}")
    for name in ("ca.key", "server.key"):
        os.chmod(os.path.join(folder, name), 0o600)
    return (os.path.join(folder, "ca.pem"), os.path.join(folder, "server.pem"),
            os.path.join(folder, "server.key"))


def main(argv):
    if not 1 <= len(argv) <= 3:
        print("usage: tests/tls_certs.py FOLDER [SAN [DAYS]]", file=sys.stderr)
        return 2
    try:
        paths = make_certs(argv[0], *argv[1:2], *map(int, argv[2:3]))
    except (RuntimeError, OSError) as e:
        print(f"tls_certs.py: {e}", file=sys.stderr)
        return 1
    print("\n".join(paths))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
