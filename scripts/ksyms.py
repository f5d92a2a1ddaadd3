"""Kernel text symbols from a System.map, for the host scripts.

symbolize.sh names the addresses in a guest log; profile-report.py sums a
bench profile by function.
"""
import bisect


class Ksyms:
    """The text symbols of one System.map, sorted by address."""

    def __init__(self, path):
        syms = []
        with open(path) as f:
            for line in f:
                addr, kind, name = line.split()[:3]
                if kind in 'tTwW':
                    syms.append((int(addr, 16), name))
        syms.sort()
        self.addrs = [a for a, _ in syms]
        self.names = [n for _, n in syms]

    def find(self, addr):
        """(name, offset) of the function holding @addr, or None."""
        i = bisect.bisect_right(self.addrs, addr) - 1
        if i < 0:
            return None
        return self.names[i], addr - self.addrs[i]
