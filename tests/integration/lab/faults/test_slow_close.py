import socket
import time

from lab.faults import Targets, make
from lab.stack.native import NativeStack


def test_slow_close_delays_the_close_reaching_the_client(targets: Targets, lab_stack: NativeStack) -> None:
    with make("slow_close", delay_ms=300).on(targets):
        with socket.create_connection(("127.0.0.1", lab_stack.cfg.ports["redis_proxy"]), timeout=10) as s:
            # The clock starts before the send: the close's delay starts once Redis has closed,
            # which a descheduled test could see before a clock read after the send.
            t0 = time.monotonic()
            s.sendall(b"QUIT\r\n")
            data = b""
            while chunk := s.recv(64):  # until EOF: Redis closes after +OK
                data += chunk
            waited_ms = (time.monotonic() - t0) * 1000
    assert data.startswith(b"+OK")
    assert waited_ms >= 300
