import ContinuumCore
import ContinuumWire
import Foundation
import NIOConcurrencyHelpers
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Floods that cost the node work without any message being out of its limits (PROTOCOL.md §7.8.15): RECORDS and
/// PUSH frames of 1,000 records the node holds already, and PHOTO_DATA the node never asked for. Beside the flooder
/// two honest nodes sync through the node: their PING round trip and the time for a comment to cross the node stay
/// within 3× of the same figures with no flood, and the flooder is refused within 2 s.
@Suite("Floods of held records and unasked data: the flooder refused, the others served", .serialized)
struct FloodMoreTests {
    /// Floors for the comparisons, as in ``FloodTests``: below these, loopback figures are scheduler noise.
    private static let pingFloor: Duration = .milliseconds(20)
    private static let relayFloor: Duration = .milliseconds(150)

    @Test("held RECORDS, held PUSH, unasked PHOTO_DATA: refused in 2 s, the honest peers stay served")
    func floods() async throws {
        let node = try await TestNode("target")
        let honest1 = try await TestNode("honest1")
        let honest2 = try await TestNode("honest2")
        defer { for each in [node, honest1, honest2] { each.remove() } }
        try await node.cli("post", node.fixture("lake.png"), "--caption", "the target's post")
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
        let held = try await Self.seed(node)

        let pinger = try await RawClient.handshake(port: node.port)
        let baseline = try await FloodTests.measure(pinger: pinger, from: honest1, to: honest2, post: post, samples: 5)
        print("flood baseline: ping \(baseline.ping), relay \(baseline.relay)")
        let chunk = [UInt8](repeating: 0x5A, count: WireLimits.photoChunkBytes)
        // Each flood, the ERROR it ends with, and what the node logs when the reset of the close destroys that
        // ERROR before the flooder reads it (a flooder always has bytes in flight).
        let floods: [(String, [[UInt8]], WireError.Code, String)] = [
            ("held RECORDS", [WireCodec.encode(.records(live: false, held))], .overBudget, "over its budget"),
            ("held PUSH", [WireCodec.encode(.push(held))], .overBudget, "over its budget"),
            (
                "unasked PHOTO_DATA",
                [WireCodec.encode(.photoData(AssetHash.of(Data("never asked".utf8)), offset: 0, chunk: chunk))],
                .unexpectedMessage, "PHOTO_DATA for a photo this node did not ask the peer for"
            ),
        ]
        for (name, frames, code, logged) in floods {
            let flooder = try Flooder(port: node.port, frames: frames)
            flooder.start(for: .seconds(4))
            let during = try await FloodTests.measure(
                pinger: pinger,
                from: honest1,
                to: honest2,
                post: post,
                samples: 5
            )
            let outcome = flooder.wait()
            print(
                "flood \(name): refused after \(String(describing: outcome.refusedAfter)), ping \(during.ping), relay \(during.relay)"
            )
            if let refusal = outcome.error {
                #expect(refusal.code == code, "\(name): \(refusal)")
            } else {
                let lines = node.logText.split(separator: "\n")
                #expect(
                    lines.contains { $0.contains(logged) && $0.contains("peer.id=\(flooder.peer.short)") },
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
    }

    /// Gives the node 1,000 records of a new member's log (its self-add, then 999 profile records), and returns
    /// their bytes once the node has acknowledged them all: records it holds.
    private static func seed(_ node: TestNode) async throws -> [[UInt8]] {
        let identity = NodeIdentity.generate()
        var records = [try RawClient.selfAdd(identity)]
        for sequence in UInt64(2)...1000 {
            records.append(
                try identity.sign(
                    RecordContent(
                        author: identity.author,
                        sequence: sequence,
                        previous: records.last?.id,
                        createdAt: .now(),
                        body: .profile(name: "seed \(sequence)")
                    )
                )
            )
        }
        let client = try await RawClient.handshake(port: node.port, identity: identity)
        defer { client.close() }
        for (frame, through) in [(records.prefix(1), UInt64(1)), (records.dropFirst(), UInt64(1000))] {
            try client.send(.records(live: true, frame.map(\.bytes)))
            let acknowledged = { (messages: [WireMessage]) in
                messages.contains { if case .ack(let clock) = $0 { clock[identity.author] >= through } else { false } }
            }
            try await client.read(timeout: .seconds(30), until: acknowledged)
            #expect(acknowledged(client.received), "the node stored the seed's records through \(through)")
        }
        return records.map(\.bytes)
    }
}
