import ContinuumCore
import ContinuumStore
import Foundation
import Testing

/// LAN discovery with no avahi-daemon (here: no system D-Bus at all, as in containers): the node runs, says so in
/// one line, shows why in `status`, and syncs over --peer. The late daemon and a daemon restart need real daemons,
/// so they are tested in network namespaces (scripts/netns-e2e.sh --scenarios).
@Suite("No avahi-daemon: one clear line, status says why, --peer works", .serialized)
struct NoDaemonTests {
    static let line =
        "LAN discovery is off: avahi-daemon not running (Daemon not running). "
        + "Peers given with --peer HOST:PORT still work; retrying in the background."

    static func discovery(_ node: TestNode) async throws -> [String: Any] {
        let status = try await node.cli("status", "--json")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(status.utf8)) as? [String: Any])
        return try #require(object["discovery"] as? [String: Any], "status --json: \(status)")
    }

    @Test("a node with no daemon prints the line once, reports it in status, and syncs over --peer")
    func noDaemon() async throws {
        let a = try await TestNode("alice")
        let b = try await TestNode("bob")
        defer {
            a.remove()
            b.remove()
        }
        #expect(try await Self.discovery(a)["state"] as? String == "stopped")
        let post = try await a.cli("post", a.fixture("lake.png"), "--caption", "Lake")
        try await a.start()
        try await b.start(peers: [a])
        try await eventually("bob has alice's post over --peer") { try await b.postIDs().map(\.hex) == [post] }
        try await eventually("alice says discovery is off") { a.logText.contains(Self.line) }
        let discovery = try await Self.discovery(a)
        #expect(discovery["state"] as? String == "unavailable")
        #expect(discovery["lastError"] as? String == "avahi-daemon not running (Daemon not running)")
        #expect(discovery["peersSeen"] as? Int == 0)
        let text = try await a.cli("status")
        #expect(text.contains("discovery: unavailable: avahi-daemon not running (Daemon not running)"), "\(text)")
        // It keeps retrying (every second) without repeating the line.
        try await Task.sleep(for: .seconds(2.5))
        #expect(a.logText.components(separatedBy: "LAN discovery is off").count == 2, "log: \(a.logText)")
        try await a.stop()
        try await b.stop()
    }

    @Test("--no-discovery: no line, and status says off")
    func off() async throws {
        let a = try await TestNode("alice")
        defer { a.remove() }
        try await a.start(extra: ["--no-discovery"])
        try await eventually("status answers") { (try? await Self.discovery(a)["state"] as? String) == "off" }
        #expect(!a.logText.contains("LAN discovery"))
        #expect(try await a.cli("status").contains("discovery: off (--no-discovery)"))
        try await a.stop()
    }
}
