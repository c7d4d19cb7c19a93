"""A throwaway CA and a server certificate it signed for localhost and 127.0.0.1, made with the
openssl command as tests/e2e/common.bash's make_tls makes them; for the Python tests and the
soak."""
import os
import subprocess


def make_certs(folder):
    """Makes ca.pem (with ca.key), server.pem and server.key (mode 0600) in folder (created if
    missing); returns the paths (ca, cert, key). Raises RuntimeError naming the openssl step that
    failed and its message."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "server.ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for step in (["req", "-x509", *ec, "-days", "2", "-subj", "/CN=dbs test CA",
                  "-keyout", "ca.key", "-out", "ca.pem",
                  "-addext", "basicConstraints=critical,CA:TRUE",
                  "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
                 ["req", *ec, "-subj", "/CN=dbs test server", "-keyout", "server.key",
                  "-out", "server.csr"],
                 ["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                  "-CAcreateserial", "-days", "2", "-extfile", "server.ext", "-out", "server.pem"]):
        run = subprocess.run(["openssl", *step], cwd=folder, capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError(f"openssl {' '.join(step)}: {run.stderr.strip()}")
    key = os.path.join(folder, "server.key")
    os.chmod(key, 0o600)
    return os.path.join(folder, "ca.pem"), os.path.join(folder, "server.pem"), key
