"""TLS for the soak: the certificates of tests/tls_certs.py (make_certs), the client context
that trusts only their CA, and half a ClientHello."""
import os
import shutil
import ssl
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tls_certs import make_certs  # noqa: E402,F401 (tls_files.make_certs for the soak)

# The start of a ClientHello, cut short: a handshake that stops halfway.
HALF_HELLO = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"


def unavailable():
    """Why the soak cannot speak TLS on this machine, or None."""
    if shutil.which("openssl") is None:
        return "openssl missing (apt-get install openssl)"
    return None


def client_context(ca):
    """Verifies the daemon's certificate against ca (and its IP address), as dbs-agent does."""
    return ssl.create_default_context(cafile=ca)
