import ContinuumCore
import ContinuumWire
import Foundation
import NIOConcurrencyHelpers
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// One peer floods a real node with each kind of message while two honest nodes sync through it. The flooder must
/// get ERROR *over budget* within 2 s; meanwhile the honest peers' PING round trip and the time for a comment to
/// cross the node stay within 3× of the same figures measured with no flood; at the end SIGTERM stops the node
/// within 10 s with exit status 0.
@Suite("Floods: one peer over its budget, the others served", .serialized)
struct FloodTests {
    /// Floors for the comparisons: below these, loopback figures are scheduler noise on a shared 2-core machine
    /// running debug builds, not service (a 1.4 ms PING round trip times 3 is still nothing a person or a peer could
    /// notice; a flooder's frames being decoded on the same event loop for a few milliseconds is).
    /// The PING floor times 3 is the absolute cap: an honest peer never stalls for more than 100 ms. (It was
    /// 20 ms. Under the CLOCK flood the honest PING varies from 5 to 36 ms from run to run on this machine, on the
    /// code of 0087e81 as on later code (five runs of each, back to back, 2026-11-26), and reached 64.6 ms once in
    /// CI's parallel suite: 3 × 20 ms was within the noise.)
    private static let pingFloor: Duration = .milliseconds(33)
    private static let relayFloor: Duration = .milliseconds(150)

    @Test("each message type flooded at its limits: the flooder is refused in 2 s, the honest peers stay served")
    func floods() async throws {
        try await Self.withNodes(photo: { $0.fixture("lake.png") }, body: Self.floodEachType)
    }

    private static func floodEachType(node: TestNode, honest1: TestNode, honest2: TestNode, post: PostID) async throws {
        let pinger = try await RawClient.handshake(port: node.port)
        let baseline = try await Self.measure(pinger: pinger, from: honest1, to: honest2, post: post, samples: 5)
        print("flood baseline: ping \(baseline.ping), relay \(baseline.relay)")

        for (name, frames) in Self.floods() {
            let flooder = try Flooder(port: node.port, frames: frames)
            flooder.start(for: .seconds(4))
            let during = try await Self.measure(pinger: pinger, from: honest1, to: honest2, post: post, samples: 5)
            let outcome = flooder.wait()
            print(
                "flood \(name): refused after \(String(describing: outcome.refusedAfter)), ping \(during.ping), relay \(during.relay)"
            )
            // The node sends ERROR *over budget* and lingers a second for the flooder to read it; a flooder that
            // reads little under load may still lose it to the reset of the close. Then the node's log names it.
            if let refusal = outcome.error {
                #expect(refusal.code == .overBudget, "\(name): \(refusal)")
            } else {
                let logged = node.logText.split(separator: "\n").contains {
                    $0.contains("over its budget") && $0.contains("peer.id=\(flooder.peer.short)")
                }
                #expect(
                    logged,
                    "\(name): no ERROR from the node (got \(outcome.types.count) frames), and no refusal logged"
                )
            }
            let after = try #require(outcome.refusedAfter ?? outcome.closedAfter, "\(name): the node kept the flooder")
            #expect(after < .seconds(2), "\(name): refused after \(after)")
            #expect(
                during.ping <= max(baseline.ping, Self.pingFloor) * 3,
                "\(name): honest PING round trip \(during.ping) under flood, \(baseline.ping) without"
            )
            #expect(
                during.relay <= max(baseline.relay, Self.relayFloor) * 3,
                "\(name): a comment took \(during.relay) to cross the node under flood, \(baseline.relay) without"
            )
        }
        #expect(node.logText.contains("over its budget"), "the node logs why it dropped the flooder")
        // The honest sessions survived every flood.
        let peers =
            try JSONSerialization.jsonObject(with: Data(try await node.cli("peers", "--json").utf8)) as? [String: Any]
        let connected = Set(
            ((peers?["peers"] as? [[String: Any]]) ?? []).filter { $0["state"] as? String == "connected" }
                .compactMap { $0["name"] as? String }
        )
        #expect(connected.isSuperset(of: [honest1.name, honest2.name]), "connected: \(connected)")

    }

    @Test("a peer that stops reading holds up nobody: gossip, pushes and photos still reach the others")
    func peerThatDoesNotRead() async throws {
        let photo = { (node: TestNode) in
            let image = node.data.appendingPathComponent("big.png")
            try SyncIntegrationTests.bigPNG(megabytes: 8, at: image)
            return image.path
        }
        try await Self.withNodes(photo: photo, body: Self.stallOneReader)
    }

    private static func stallOneReader(node: TestNode, honest1: TestNode, honest2: TestNode, post: PostID) async throws
    {
        let hash = AssetHash.of(try Data(contentsOf: node.data.appendingPathComponent("big.png")))
        let pinger = try await RawClient.handshake(port: node.port)
        let baseline = try await Self.measure(pinger: pinger, from: honest1, to: honest2, post: post, samples: 3)

        // The stalled peer asks for 64 MiB of photo and never reads another byte: the node's socket to it fills.
        let stalled = try await RawClient.handshake(port: node.port)
        for _ in 0..<8 { try stalled.send(.photoWant(hash, offset: 0)) }
        try await Task.sleep(for: .seconds(2))
        let during = try await Self.measure(pinger: pinger, from: honest1, to: honest2, post: post, samples: 3)
        print(
            "stalled reader: baseline ping \(baseline.ping) relay \(baseline.relay); during \(during.ping) \(during.relay)"
        )
        #expect(during.ping <= max(baseline.ping, Self.pingFloor) * 3, "PING \(during.ping), \(baseline.ping) without")
        #expect(
            during.relay <= max(baseline.relay, Self.relayFloor) * 3,
            "relay \(during.relay), \(baseline.relay) without"
        )
        // And the honest nodes still get the big photo itself.
        try await eventually("the honest nodes fetch the photo meanwhile", timeout: .seconds(60)) {
            let first = try await honest1.withStore { try await $0.hasPhoto(hash) }
            let second = try await honest2.withStore { try await $0.hasPhoto(hash) }
            return first && second
        }
        stalled.close()
    }

    /// A target node holding one post with the photo `photo` makes, and two honest nodes dialling it that hold the
    /// post too (all plaintext, rounds only on connect); then `body`; then SIGTERM, and a clean exit within 10 s.
    private static func withNodes(
        photo: (TestNode) throws -> String,
        body: (TestNode, TestNode, TestNode, PostID) async throws -> Void
    ) async throws {
        let node = try await TestNode("target")
        let honest1 = try await TestNode("honest1")
        let honest2 = try await TestNode("honest2")
        defer { for each in [node, honest1, honest2] { each.remove() } }
        try await node.cli("post", try photo(node), "--caption", "the target's post")
        let plaintext = ["--insecure-plaintext", "--anti-entropy-interval", "600"]
        try await node.start(extra: plaintext)
        try await honest1.start(peers: [node], extra: plaintext)
        try await honest2.start(peers: [node], extra: plaintext)
        let post = try #require(try await node.postIDs().first)
        try await eventually("both honest nodes hold the post") {
            let first = try await honest1.postIDs()
            let second = try await honest2.postIDs()
            return first.contains(post) && second.contains(post)
        }
        try await body(node, honest1, honest2, post)

        let process = try #require(node.process)
        let stopping = ContinuousClock.now
        kill(process.processIdentifier, SIGTERM)
        try await eventually("the node exits", timeout: .seconds(10)) { !process.isRunning }
        #expect(process.terminationStatus == 0)
        #expect(ContinuousClock.now - stopping < .seconds(10))
    }

    /// Frames to repeat for each flood, each at the limits of its type.
    private static func floods() -> [(String, [[UInt8]])] {
        func random32() -> Data { Data((0..<32).map { _ in UInt8.random(in: 0...255) }) }
        let interest = (0..<WireLimits.maxInterestEntries).map {
            PostInterest(post: PostID(unchecked: random32()), hops: UInt8($0 % 8))
        }
        let ranges = (0..<WireLimits.maxRanges).map { _ in
            LogRange(author: AuthorID(unchecked: random32()), range: 1...1000)
        }
        let clock = VectorClock(
            Dictionary(uniqueKeysWithValues: (0..<20_000).map { _ in (AuthorID(unchecked: random32()), UInt64(5)) })
        )
        return [
            ("PING", (0..<64).map { WireCodec.encode(.ping(UInt64($0))) }),
            ("INTEREST", [WireCodec.encode(.interest(replace: true, interest))]),
            ("CLOCK", Self.clockFrames(clock, rounds: 1...64)),
            ("REQUEST", [WireCodec.encode(.request(ranges))]),
            ("ACK", [WireCodec.encode(.ack(clock))]),
            (
                "PHOTO_WANT",
                (0..<64).map { _ in WireCodec.encode(.photoWant(AssetHash(unchecked: random32()), offset: 0)) }
            ),
            ("THUMB_WANT", (0..<64).map { _ in WireCodec.encode(.thumbWant(AssetHash(unchecked: random32()))) }),
            // False announcements of 10,000 authors each, and a link pruned and grafted without end.
            ("HAVE", [WireCodec.encode(.have(ranges))]),
            ("TREE", (0..<64).map { WireCodec.encode(.tree(eager: $0 % 2 == 0)) }),
        ]
    }

    /// CLOCK frames of the same clock for each round: encoded once, the round written into copies (encoding a clock
    /// of 20,000 entries sorts them, about 150 ms in a debug build; 64 encodings took a core for 10 s).
    private static func clockFrames(_ clock: VectorClock, rounds: ClosedRange<UInt32>) -> [[UInt8]] {
        let first = WireCodec.encode(.clock(round: rounds.lowerBound, clock))
        // Length prefix (4 bytes), version and type (1 each), then the round, big-endian (PROTOCOL.md §7).
        let roundOffset = 6
        return rounds.map { round in
            var frame = first
            frame.replaceSubrange(roundOffset..<roundOffset + 4, with: withUnsafeBytes(of: round.bigEndian, Array.init))
            return frame
        }
    }

    /// Median PING round trip of an honest raw session, and the time a comment made on `from` takes to reach `to`
    /// through the node.
    static func measure(
        pinger: RawClient,
        from: TestNode,
        to: TestNode,
        post: PostID,
        samples: Int
    ) async throws -> (ping: Duration, relay: Duration) {
        var pings: [Duration] = []
        var relays: [Duration] = []
        for index in 0..<samples {
            let nonce = UInt64.random(in: 1...UInt64.max)
            let sent = ContinuousClock.now
            try pinger.send(.ping(nonce))
            try await pinger.read(timeout: .seconds(10)) { $0.contains(.pong(nonce)) }
            #expect(pinger.received.contains(.pong(nonce)), "the honest PING was answered")
            pings.append(ContinuousClock.now - sent)

            let before = try await to.clock()
            _ = try await from.cli("comment", post.hex, "relay \(index)")
            let target = try await from.clock()
            let written = ContinuousClock.now
            // Polled every 2 ms (``eventually``'s 50 ms would hide the figure being measured).
            var arrived = false
            while !arrived, ContinuousClock.now - written < .seconds(30) {
                let clock = try await to.clock()
                arrived = clock != before && target.heads.allSatisfy { clock[$0.key] >= $0.value }
                if !arrived { try await Task.sleep(for: .milliseconds(2)) }
            }
            #expect(arrived, "the comment crossed the node within 30 s")
            relays.append(ContinuousClock.now - written)
        }
        return (pings.sorted()[pings.count / 2], relays.sorted()[relays.count / 2])
    }
}
