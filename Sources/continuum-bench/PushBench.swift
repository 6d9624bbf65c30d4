import ArgumentParser
import ContinuumCore
import ContinuumNode
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// `continuum-bench push`: three real nodes in a line A – B – C on loopback; C follows a post of A's.
struct PushBench: BenchSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Latency from a comment's creation to the follower's notification: one hop, and relayed."
    )

    @Option(help: "Comments timed for each path.")
    var samples = 1000

    @Option(help: "Where to put the data directories (default: a temporary directory, removed afterwards).")
    var scratch: String?

    @Option(name: .customLong("node-option"), help: "An option passed to every node (repeatable).")
    var nodeOptions: [String] = []

    @OptionGroup var output: ReportOptions

    func measure() async throws {
        let root = URL(fileURLWithPath: scratch ?? NSTemporaryDirectory())
            .appendingPathComponent("continuum-bench-push-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let logger = Logger(label: "bench")
        say(
            "continuum-bench push: nodes A - B - C in a line on loopback, TLS; C follows a post of A's; \(samples) comments per path"
        )
        let floor = try await Self.hopFloor(in: root.appendingPathComponent("baseline"))

        let nodes = try ["a", "b", "c"].map { try BenchNode(root.appendingPathComponent($0), logger: logger) }
        let (a, b, c) = (nodes[0], nodes[1], nodes[2])
        // Each node signs with its log key in the bench network; sessions are by node id.
        var ids: [NodeIdentity] = []
        for node in nodes { ids.append(try await node.logIdentity()) }
        let nodeIDs = try nodes.map { try IdentityFile.loadOrCreate(at: $0.directory.identityURL).0.author }
        defer { for node in nodes { try? node.stop() } }
        try a.start(extra: nodeOptions)
        try b.start(peer: a.port, extra: nodeOptions)
        try c.start(peer: b.port, extra: nodeOptions)

        let (followed, unfollowed) = try await Self.postAndFollow(a: a, c: c, ids: ids, relay: nodeIDs[1])
        var notified = 0
        let oneHop = try await pushLatencies(on: b, by: ids[1], post: followed, follower: c, notified: &notified)
        let twoHops = try await pushLatencies(on: a, by: ids[0], post: followed, follower: c, notified: &notified)
        // For comparison: live gossip of a comment on a post nobody follows, B -> C.
        let gossip = try await gossipLatencies(on: b, by: ids[1], post: unfollowed, receiver: c)
        for (name, key, values, hops) in [
            ("push, 1 hop (B -> C)", "oneHop", oneHop, 1.0),
            ("push, 2 hops (A -> B -> C, B does not follow)", "twoHops", twoHops, 2.0),
            ("live gossip, 1 hop, for comparison (stored on C, no notification)", "gossip", gossip, 1.0),
        ] {
            let ms = { (value: Double) in format(value * 1000, 2) }
            let hop = median(values) / hops
            say(
                "          \(name): p50 \(ms(median(values))) ms, p99 \(ms(percentile(values, 99))) ms, max "
                    + "\(ms(values.max() ?? .nan)) ms (\(values.count) samples); a hop at p50 = "
                    + "\(format(hop / floor.total, 2))x its floor, \(format(hop / floor.commit, 2))x a durable commit",
                [
                    "\(key).p50Ms": median(values) * 1000, "\(key).p99Ms": percentile(values, 99) * 1000,
                    "\(key).hopToFloor": hop / floor.total, "\(key).hopToCommit": hop / floor.commit,
                ]
            )
        }
        say("targets   a hop at p50 <= 3x its floor; 2 hops p99 <= 10 ms")
    }

    /// What a hop cannot go below on this machine, each part measured now: half a loopback round trip (the comment
    /// crosses once), one Ed25519 verify on one core (the receiver checks the record), and one durable SQLite commit
    /// on this disk (the receiver stores it before it notifies). Seconds.
    static func hopFloor(in directory: URL) async throws -> (total: Double, commit: Double) {
        let rtt = try loopbackRoundTrip(count: 2000)
        say(
            "baseline  raw TCP loopback round trip, 1 byte each way: \(format(rtt * 1e6, 1)) µs (median of 2000)",
            ["baseline.loopbackRoundTripMicroseconds": rtt * 1e6]
        )
        let verify1 = median([await ed25519VerifyRate(threads: 1), await ed25519VerifyRate(threads: 1)])
        say(
            "baseline  Ed25519 verify, 1 thread: \(format(verify1)) /s = \(format(1e6 / verify1, 1)) µs each",
            ["baseline.verify1PerSecond": verify1]
        )
        let commits = try DurableCommit.latencies(count: 1000, in: directory)
        let commit = median(commits)
        say(
            "baseline  one durable SQLite commit on this disk (WAL, synchronous=FULL, one 300-byte row): median "
                + "\(format(commit * 1000, 2)) ms, p99 \(format(percentile(commits, 99) * 1000, 2)) ms (1000 commits)",
            ["baseline.durableCommitMs": commit * 1000]
        )
        let total = rtt / 2 + 1 / verify1 + commit
        say(
            "floor     a hop: half the round trip + one verify + one durable commit = \(format(total * 1000, 3)) ms",
            ["floor.hopMs": total * 1000]
        )
        return (total, commit)
    }

    /// A posts twice; once C has both posts, C follows the first and A learns that B (the node `relay`) relays C's
    /// interest. Returns the followed post and the other.
    static func postAndFollow(
        a: BenchNode,
        c: BenchNode,
        ids: [NodeIdentity],
        relay: AuthorID
    ) async throws -> (followed: PostID, unfollowed: PostID) {
        let photo = PhotoReference(
            sha256: AssetHash.of(Data("bench photo".utf8)),
            byteCount: 11,
            mediaType: .png,
            width: 1,
            height: 1
        )
        let followed = PostID(
            try await a.store.append(.post(caption: "followed", photo: photo, location: nil), by: ids[0]).id
        )
        let unfollowed = PostID(
            try await a.store.append(.post(caption: "not followed", photo: photo, location: nil), by: ids[0]).id
        )
        ControlClient.tell(a.directory, .stored)
        try await waitUntil("C has both posts") { try await c.store.post(unfollowed) != nil }
        try await c.store.follow(followed)
        ControlClient.tell(c.directory, .followsChanged)
        try await waitUntil("A knows B relays C's interest") {
            interest(on: a.directory, from: relay) == 1
        }
        return (followed, unfollowed)
    }

    /// Times SAMPLES comments made on `node` until the follower has made the notification for each. `notified`
    /// counts the notifications made so far, across calls.
    func pushLatencies(
        on node: BenchNode,
        by identity: NodeIdentity,
        post: PostID,
        follower: BenchNode,
        notified: inout Int
    ) async throws -> [Double] {
        var latencies: [Double] = []
        for index in 0..<samples {
            _ = try await node.store.append(.comment(post: post, text: "comment \(index)"), by: identity)
            let start = ContinuousClock.now
            ControlClient.tell(node.directory, .stored)
            notified += 1
            let target = notified
            // The cheapest look (the newest number), so that polling every 200 µs takes little of the CPU the
            // three nodes share.
            while try await follower.store.lastNotificationID() < Int64(target) {
                try await Task.sleep(for: .microseconds(200))
            }
            latencies.append(seconds(since: start))
            try await Task.sleep(for: .milliseconds(20))
        }
        return latencies
    }

    /// Times SAMPLES comments made on `node` on a post nobody follows until `receiver` has stored each.
    func gossipLatencies(
        on node: BenchNode,
        by identity: NodeIdentity,
        post: PostID,
        receiver: BenchNode
    ) async throws -> [Double] {
        var latencies: [Double] = []
        for index in 0..<samples {
            let comment = try await node.store.append(.comment(post: post, text: "gossip \(index)"), by: identity)
            let start = ContinuousClock.now
            ControlClient.tell(node.directory, .stored)
            // The cheapest look, as for the pushes: the receiver's head of the comment's log (a read of the post
            // with its comments grew with every sample, to a thousand comments, and took the nodes' CPU).
            while try await receiver.store.clock()[comment.header.author] < comment.header.sequence {
                try await Task.sleep(for: .microseconds(200))
            }
            latencies.append(seconds(since: start))
            try await Task.sleep(for: .milliseconds(20))
        }
        return latencies
    }

    static func interest(on directory: DataDirectory, from peer: AuthorID) -> Int? {
        guard let client = try? ControlClient(directory), (try? client.send(.connected)) != nil,
            case .connected(_, let interest, _)? = try? client.reply()
        else { return nil }
        return interest[peer]
    }

    static func waitUntil(_ what: String, _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw ValidationError("timed out: \(what)")
    }

    /// The median time for one byte to go to an echo thread and back over TCP on 127.0.0.1.
    /// A TCP socket listening on 127.0.0.1 and a free port, and the port.
    static func loopbackListener() throws -> (Int32, Int) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = CountingProxy.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 1) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        guard bound else {
            close(listener)
            throw ValidationError("cannot listen on loopback")
        }
        return (listener, Int(UInt16(bigEndian: address.sin_port)))
    }

    static func loopbackRoundTrip(count: Int) throws -> Double {
        let (listener, port) = try loopbackListener()
        defer { close(listener) }
        Thread.detachNewThread {
            let peer = accept(listener, nil, nil)
            var byte: UInt8 = 0
            while recv(peer, &byte, 1, 0) == 1 { _ = send(peer, &byte, 1, 0) }
            close(peer)
        }
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(client) }
        var yes: Int32 = 1
        setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
        var target = CountingProxy.loopback(port: port)
        let connected = withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw ValidationError("cannot connect on loopback") }
        var times: [Double] = []
        var byte: UInt8 = 1
        for _ in 0..<count {
            let start = ContinuousClock.now
            guard send(client, &byte, 1, 0) == 1, recv(client, &byte, 1, 0) == 1 else {
                throw ValidationError("loopback echo failed")
            }
            times.append(seconds(since: start))
        }
        return median(times)
    }
}
