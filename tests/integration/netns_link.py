"""NetnsLink: a network namespace joined to this one by a veth pair whose both ends are shaped
by a `tbf` qdisc: a real, kernel-enforced bandwidth cap between processes, for the integration
tests. Needs root (CAP_NET_ADMIN) and iproute2; NetnsLink.create() returns None, with the reason
in NetnsLink.unavailable, where it cannot be made.

    link = NetnsLink.create(rate="1mbit")
    coordinator listens on link.host_ip; clients run as link.wrap([client, ...]) and connect to it
    link.close()

The namespace, the veth pair and their qdiscs go away with close() (deleting the namespace
deletes its end of the pair, and with it the other).
"""
import os
import random
import shutil
import subprocess


class NetnsLink:
    unavailable = ""

    def __init__(self, name, host_if, peer_if, host_ip, peer_ip):
        self.name, self.host_if, self.peer_if = name, host_if, peer_if
        self.host_ip, self.peer_ip = host_ip, peer_ip

    @classmethod
    def create(cls, rate="1mbit", burst="32kbit", latency="400ms"):
        if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("tc"):
            cls.unavailable = "needs root, ip and tc"
            return None
        tag = f"{os.getpid() % 100000:05d}{random.randrange(100):02d}"
        subnet = f"10.{random.randrange(64, 250)}.{random.randrange(1, 250)}"
        link = cls(f"trib{tag}", f"tb{tag}h", f"tb{tag}p", f"{subnet}.1", f"{subnet}.2")
        shape = ["root", "tbf", "rate", rate, "burst", burst, "latency", latency]
        steps = [
            ["ip", "netns", "add", link.name],
            ["ip", "link", "add", link.host_if, "type", "veth", "peer", "name", link.peer_if],
            ["ip", "link", "set", link.peer_if, "netns", link.name],
            ["ip", "addr", "add", f"{link.host_ip}/24", "dev", link.host_if],
            ["ip", "link", "set", link.host_if, "up"],
            link.wrap(["ip", "addr", "add", f"{link.peer_ip}/24", "dev", link.peer_if]),
            link.wrap(["ip", "link", "set", link.peer_if, "up"]),
            link.wrap(["ip", "link", "set", "lo", "up"]),
            ["tc", "qdisc", "add", "dev", link.host_if, *shape],
            link.wrap(["tc", "qdisc", "add", "dev", link.peer_if, *shape]),
        ]
        for step in steps:
            r = subprocess.run(step, capture_output=True, text=True)
            if r.returncode != 0:
                cls.unavailable = f"`{' '.join(step)}` failed: {r.stderr.strip()}"
                link.close()
                return None
        return link

    def wrap(self, args):
        """The command line that runs `args` inside the namespace."""
        return ["ip", "netns", "exec", self.name, *args]

    def qdisc(self):
        """`tc -s qdisc` of the host end: rate and bytes sent, for the test's log."""
        return subprocess.run(["tc", "-s", "qdisc", "show", "dev", self.host_if],
                              capture_output=True, text=True).stdout

    def close(self):
        subprocess.run(["ip", "link", "del", self.host_if], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)
