"""Try to reach the network: the port to call is in port.txt."""

import socket


def causal_mask(n):
    with open("port.txt") as f:
        port = int(f.read())
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        s.sendall(b"stolen")
    return "connected"
