"""Addresses: which hosts are this machine's loopback (the only ones a server without API keys may bind, and the
only ``Host``/``Origin`` a loopback-bound server accepts)."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
