#!/usr/bin/python3
"""free_port(): a TCP port of 127.0.0.1 that is free at the moment of asking (bind port 0, read
the port, close). The one for the Python tests, the lab's PyTorch studies and, run as
`tests/ports.py` (it prints the port), the shell tests; the unit tests of lib/net ask asio for
theirs in-process. Another process may take the port before the caller binds it: callers that
start a server on it retry or let the server choose (port 0) where they can.
"""
import socket


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


if __name__ == "__main__":
    print(free_port())
