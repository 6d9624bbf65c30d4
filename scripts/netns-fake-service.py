#!/usr/bin/python3
"""A `_continuum._tcp` service that is not a node, for scripts/netns-e2e.sh (scenario d), run inside a test
network namespace with DBUS_SYSTEM_BUS_ADDRESS set to that namespace's bus.

Publishes the service through avahi-daemon's D-Bus API with the TXT of PROTOCOL.md §9.2 and `net=FIRST_NET`,
prints `published`, waits until the file FLAG exists, then changes the TXT in place (the same service, not
removed) to `net=SECOND_NET`, prints `updated`, and stays until killed.

Usage: netns-fake-service.py NODE_HEX FIRST_NET SECOND_NET FLAG
"""
import os
import sys
import time

import dbus

node, first, second, flag = sys.argv[1:5]
bus = dbus.SystemBus()
server = dbus.Interface(bus.get_object("org.freedesktop.Avahi", "/"), "org.freedesktop.Avahi.Server")
group = dbus.Interface(
    bus.get_object("org.freedesktop.Avahi", server.EntryGroupNew()), "org.freedesktop.Avahi.EntryGroup"
)


def txt(net):
    # This node's protocol version: a node does not dial, or count as discovered, a peer of an earlier one.
    entries = ["txtvers=1", "node=" + node, "proto=3", "net=" + net]
    return [dbus.Array([dbus.Byte(b) for b in entry.encode()], signature="y") for entry in entries]


# interface and protocol -1: all; flags 0; domain and host "": the daemon's own.
group.AddService(-1, -1, dbus.UInt32(0), "fake", "_continuum._tcp", "", "", dbus.UInt16(7999), txt(first))
group.Commit()
print("published", flush=True)
while not os.path.exists(flag):
    time.sleep(0.05)
group.UpdateServiceTxt(-1, -1, dbus.UInt32(0), "fake", "_continuum._tcp", "", txt(second))
print("updated", flush=True)
while True:
    time.sleep(60)
