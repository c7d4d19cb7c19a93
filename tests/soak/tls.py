"""TLS for the soak: a throwaway CA and a server certificate for 127.0.0.1 made with openssl (as
tests/e2e/common.bash's make_tls does), and the client context that trusts only that CA."""
import os
import shutil
import ssl
import subprocess

# The start of a ClientHello, cut short: a handshake that stops halfway.
HALF_HELLO = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"


def unavailable():
    """Why the soak cannot speak TLS on this machine, or None."""
    if shutil.which("openssl") is None:
        return "openssl missing (apt-get install openssl)"
    return None


def make_certs(d):
    """The CA certificate, the server certificate and its key (paths), made in folder d."""
    os.makedirs(d, exist_ok=True)
    ca, ca_key = os.path.join(d, "ca.pem"), os.path.join(d, "ca.key")
    cert, key = os.path.join(d, "server.pem"), os.path.join(d, "server.key")
    csr, ext = os.path.join(d, "server.csr"), os.path.join(d, "server.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for cmd in (["openssl", "req", "-x509", *ec, "-days", "2", "-subj", "/CN=dbs soak CA",
                 "-keyout", ca_key, "-out", ca, "-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
                ["openssl", "req", *ec, "-subj", "/CN=dbs soak server", "-keyout", key,
                 "-out", csr],
                ["openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key,
                 "-CAcreateserial", "-days", "2", "-extfile", ext, "-out", cert]):
        subprocess.run(cmd, check=True, capture_output=True)
    os.chmod(key, 0o600)
    return ca, cert, key


def client_context(ca):
    """Verifies the daemon's certificate against ca (and its IP address), as dbs-agent does."""
    return ssl.create_default_context(cafile=ca)
