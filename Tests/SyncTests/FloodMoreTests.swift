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
        let baseline = try await Self.measure(pinger: pinger, from: honest1, to: honest2, post: post, samples: 5)
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
            let flooder = try MoreFlooder(port: node.port, frames: frames)
            flooder.start(for: .seconds(4))
            let during = try await Self.measure(pinger: pinger, from: honest1, to: honest2, post: post, samples: 5)
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

    /// Median PING round trip of an honest raw session, and the time a comment made on `from` takes to reach `to`
    /// through the node (as ``FloodTests`` measures them).
    private static func measure(
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

/// A flooding peer, as in ``FloodTests``: its own socket and thread, writing the same frames over and over after a
/// HELLO and MEMBERSHIP, and reading what the node sends, until the node refuses it or time is up.
private final class MoreFlooder: Sendable {
    struct Outcome: Sendable {
        var error: WireError?
        var refusedAfter: Duration?
        /// When the node closed the connection (an end of stream or a reset), ERROR or not.
        var closedAfter: Duration?
        var types: [String] = []
    }

    private let identity = NodeIdentity.generate()
    /// The flooder's node id, as the node's log names it.
    var peer: AuthorID { identity.author }
    private let descriptor: Int32
    private let frames: [[UInt8]]
    private let outcome = NIOLockedValueBox(Outcome())
    private let done = DispatchSemaphore(value: 0)

    init(port: Int, frames: [[UInt8]]) throws {
        descriptor = try HTTPTestClient.connectLoopback(port, receiveTimeout: nil)
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        self.frames = frames
    }

    deinit { Glibc.close(descriptor) }

    func start(for limit: Duration) {
        let thread = Thread { [self] in
            run(limit)
            done.signal()
        }
        thread.start()
    }

    func wait() -> Outcome {
        done.wait()
        return outcome.withLockedValue { $0 }
    }

    private func handshake(_ decoder: inout FrameDecoder, _ buffer: inout [UInt8]) {
        let ours = RawClient.hello(for: identity)
        let hello = WireCodec.encode(.hello(ours))
        _ = hello.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var theirs: Hello?
        let deadline = ContinuousClock.now + .seconds(10)
        while theirs == nil, ContinuousClock.now < deadline {
            let count = buffer.withUnsafeMutableBytes {
                recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
            }
            if count > 0 {
                decoder.append(buffer[0..<count])
                while let message = try? decoder.next() {
                    if case .hello(let hello) = message { theirs = hello }
                }
            } else if count == 0 {
                return
            } else {
                usleep(2_000)
            }
        }
        guard let theirs else { return }
        let membership = WireCodec.encode(.membership(RawClient.membership(for: identity, ours: ours, theirs: theirs)))
        _ = membership.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    private func run(_ limit: Duration) {
        var decoder = FrameDecoder()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        handshake(&decoder, &buffer)
        let started = ContinuousClock.now
        var index = 0
        var closed = false
        // The frame being written and how much of it is out (a write cut short goes on from there).
        var frame = frames[0]
        var offset = 0
        while ContinuousClock.now - started < limit + .seconds(2) {
            if !closed, ContinuousClock.now - started < limit {
                if offset == frame.count {
                    index += 1
                    frame = frames[index % frames.count]
                    offset = 0
                }
                let sent = frame[offset...].withUnsafeBytes {
                    Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                }
                if sent > 0 {
                    offset += sent
                } else if !(sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                    closed = true
                }
            } else {
                usleep(5_000)
            }
            let count = buffer.withUnsafeMutableBytes {
                recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
            }
            if count > 0 {
                decoder.append(buffer[0..<count])
                while let message = try? decoder.next() {
                    let now = ContinuousClock.now
                    outcome.withLockedValue { outcome in
                        outcome.types.append(message.typeName)
                        if case .error(let error) = message, outcome.error == nil {
                            outcome.error = error
                            outcome.refusedAfter = now - started
                        }
                    }
                }
                if outcome.withLockedValue({ $0.error != nil }) { return }
            } else if count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                let now = ContinuousClock.now
                outcome.withLockedValue { $0.closedAfter = now - started }
                return
            }
        }
    }
}
