import ContinuumCore
import ContinuumTestSupport
import Foundation
import Testing

/// `peers` while a session is open: the counters show what it moved so far, not 0/0 until it ends, and the figure
/// is not counted twice once the session ends and its counters are stored.
@Suite("Live peer counters", .serialized)
struct PeerCountersTests {
    /// Bob's view of Alice, from `peers --json`.
    static func aliceSeenBy(_ bob: TestNode) async throws -> [String: Any]? {
        let peers = try JSONSerialization.jsonObject(with: Data(try await bob.cli("peers", "--json").utf8))
        return ((peers as? [String: Any])?["peers"] as? [[String: Any]])?.first { $0["name"] as? String == "Alice" }
    }

    @Test("a connected peer's records and bytes count as they come, in the CLI and the API; once each")
    func liveCounters() async throws {
        let alice = try await TestNode("Alice")
        let bob = try await TestNode("Bob")
        defer { for node in [alice, bob] { node.remove() } }
        for index in 0..<3 { try await alice.cli("post", alice.fixture("lake.png"), "--caption", "Post \(index)") }
        try await bob.start(extra: ["--anti-entropy-interval", "600"])
        try await alice.start(peers: [bob], extra: ["--anti-entropy-interval", "600"])
        try await eventually("Bob has Alice's three posts") {
            (try? await bob.cli("feed", "--json")).map { $0.components(separatedBy: "\"caption\"").count - 1 == 3 }
                ?? false
        }
        // Alice's log holds her profile and the three posts (and her self-add): at least 4 records came in.
        var live: [String: Any] = [:]
        try await eventually("Bob's peers shows the records of the open session") {
            guard let seen = try await Self.aliceSeenBy(bob), seen["state"] as? String == "connected",
                let records = seen["recordsIn"] as? Int, records >= 4, (seen["bytesIn"] as? Int ?? 0) > 0
            else { return false }
            live = seen
            return true
        }
        let text = try await bob.cli("peers")
        #expect(text.contains("records in/out \(live["recordsIn"] as? Int ?? -1)/"), "\(text)")
        let api = try await bob.http.get("/api/peers")
        let listed = (api.object["peers"] as? [[String: Any]])?.first { $0["name"] as? String == "Alice" }
        #expect(listed?["recordsIn"] as? Int == live["recordsIn"] as? Int, "\(api.text)")

        // The session ends: its counters are stored, and shown once, not added to themselves.
        try await alice.stop()
        try await eventually("Bob sees Alice gone") {
            (try? await Self.aliceSeenBy(bob))??["state"] as? String == "disconnected"
        }
        let after = try #require(try await Self.aliceSeenBy(bob))
        #expect(after["recordsIn"] as? Int == live["recordsIn"] as? Int, "\(after) vs \(live)")
        #expect((after["bytesIn"] as? Int ?? 0) >= (live["bytesIn"] as? Int ?? 0))
        try await bob.stop()
    }

    @Test("a peer is named as its posts are: by its profile, also after it renamed itself during the session")
    func peerNamedByItsProfile() async throws {
        let alice = try await TestNode("Alice")
        let bob = try await TestNode("Bob")
        defer { for node in [alice, bob] { node.remove() } }
        try await bob.start()
        try await alice.start(peers: [bob])
        try await eventually("Bob's peers shows Alice connected") {
            (try? await Self.aliceSeenBy(bob))??["state"] as? String == "connected"
        }
        // Alice renames herself while the session is open: her HELLO said "Alice", her new profile says "Alicia".
        let renamed = try await alice.http.send("PUT", "/api/name", json: ["name": "Alicia"])
        #expect(renamed.status == 200, "\(renamed.text)")
        try await alice.cli("post", alice.fixture("lake.png"), "--caption", "Renamed")
        try await eventually("Bob shows Alice's post by Alicia") {
            let feed = try await bob.http.get("/api/feed")
            return (feed.object["posts"] as? [[String: Any]])?.first?["authorName"] as? String == "Alicia"
        }
        let api = try await bob.http.get("/api/peers")
        let names = (api.object["peers"] as? [[String: Any]])?.compactMap { $0["name"] as? String }
        #expect(names == ["Alicia"], "\(api.text)")
        let text = try await bob.cli("peers")
        #expect(text.contains("Alicia") && !text.contains("(no name)"), "\(text)")
        try await alice.stop()
        try await bob.stop()
    }
}
