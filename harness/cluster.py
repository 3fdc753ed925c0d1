"""Clusters of worker processes on this host, for the distributed tests and
benchmarks: ``TF_CONFIG`` values whose ports are free when drawn."""

import contextlib
import json
import socket

import numpy as np

#: ``localhost_cluster`` draws ports from here up to the start of the kernel's
#: ephemeral range (Linux: ``ip_local_port_range``, 32768-60999 by default):
#: above the privileged ports and the usual fixed service ports. The kernel
#: hands ephemeral ports to every bind to port 0 and every outgoing connection,
#: so a port found free there can be taken by anyone (another test worker, say)
#: before the worker binds it; one below the range only by a program naming it.
CLUSTER_PORTS_LOW = 10000
#: Fewer candidate ports than this many per worker: concurrent callers could
#: draw the same ones, so the kernel's ephemeral ports are taken instead.
CLUSTER_PORTS_PER_WORKER = 100


def ephemeral_low():
    """The first port of the kernel's ephemeral range, or None where it is
    not known (no Linux ``/proc``)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def cluster_port_range(n):
    """``(low, high)``: the ports ``localhost_cluster(n)`` draws from, or None
    where it takes the kernel's free ports (see ``CLUSTER_PORTS_LOW``)."""
    high = ephemeral_low()
    if high is None or high - CLUSTER_PORTS_LOW < CLUSTER_PORTS_PER_WORKER * n:
        return None
    return CLUSTER_PORTS_LOW, high


def bindable(port):
    """Whether ``port`` can be bound as a TF worker binds it: on every address,
    IPv6 too where the host has it (gRPC listens on the wildcard address)."""
    if socket.has_dualstack_ipv6():
        sock = socket.socket(socket.AF_INET6)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        address = ("::", port)
    else:
        sock, address = socket.socket(), ("0.0.0.0", port)
    with sock:
        try:
            sock.bind(address)
        except OSError:
            return False
    return True


def localhost_cluster(n):
    """``TF_CONFIG`` values for ``n`` worker processes on 127.0.0.1, worker i's
    at index i (for tests and benchmarks). The ports are free when called and,
    where Linux says where its ephemeral range starts, drawn below it
    (``cluster_port_range``); elsewhere the kernel picks them, and another
    process may take one before the worker binds it."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive number of workers, got n={n!r}.")
    span = cluster_port_range(n)
    if span is None:
        with contextlib.ExitStack() as stack:
            socks = [stack.enter_context(socket.socket()) for _ in range(n)]
            for sock in socks:
                sock.bind(("127.0.0.1", 0))
            ports = [sock.getsockname()[1] for sock in socks]
    else:
        ports = []  # a fresh generator per call: concurrent callers draw apart
        for port in np.random.default_rng().permutation(np.arange(*span)).tolist():
            if bindable(port):
                ports.append(port)
                if len(ports) == n:
                    break
        else:
            raise RuntimeError(f"localhost_cluster: fewer than n={n} ports in "
                               f"[{span[0]}, {span[1]}) are free.")
    workers = [f"127.0.0.1:{port}" for port in ports]
    return [json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": i}})
            for i in range(n)]
