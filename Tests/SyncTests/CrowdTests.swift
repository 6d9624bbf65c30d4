import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A crowd of twelve real nodes, each told of every other by id (as LAN discovery tells it), with `--max-peers 4`:
/// the overlay keeps four sessions each, records travel along the tree of their writer and HAVE elsewhere, a follower
/// is pushed each comment once, a third of the crowd crashes and comes back, and a partition heals.
@Suite("A crowd: bounded sessions, tree push, healing", .serialized)
struct CrowdTests {
    static let size = 12
    static let maxPeers = 4

    /// Nodes whose ports are known up front (``TestNode`` reserves one each), so that each can be given every other's
    /// `ID@HOST:PORT`.
    static func crowd(_ count: Int, prefix: String) async throws -> [TestNode] {
        try await (0..<count).asyncMap { try await TestNode("\(prefix)\($0)") }
    }

    static func address(_ node: TestNode) async throws -> String { "\(try await node.nodeID())@127.0.0.1:\(node.port)" }

    /// Starts `node` knowing `others` by id.
    static func start(_ node: TestNode, knowing others: [TestNode], ids: [ObjectIdentifier: String]) async throws {
        var extra = ["--max-peers", "\(maxPeers)", "--no-api"]
        for other in others where other !== node { extra += ["--peer", ids[ObjectIdentifier(other)]!] }
        try await node.start(extra: extra)
    }

    /// The peers `node` has a session with now, from `peers --json`.
    static func connected(_ node: TestNode) async throws -> [String] {
        let object = try JSONSerialization.jsonObject(with: Data(try await node.cli("peers", "--json").utf8))
        let peers = (object as? [String: Any])?["peers"] as? [[String: Any]] ?? []
        return peers.filter { $0["state"] as? String == "connected" }.compactMap { $0["id"] as? String }
    }

    static func holds(_ node: TestNode, _ post: String) async throws -> Bool {
        try await node.withStore { try await $0.post(PostID(hex: post)!) != nil }
    }

    @Test(
        "12 nodes: at most 4 sessions each, one copy of a post each, a follower pushed once, a third crashes and heals"
    )
    func crowdOfTwelve() async throws {
        let nodes = try await Self.crowd(Self.size, prefix: "crowd")
        defer { for node in nodes { node.remove() } }
        var ids: [ObjectIdentifier: String] = [:]
        for node in nodes { ids[ObjectIdentifier(node)] = try await Self.address(node) }
        for node in nodes { try await Self.start(node, knowing: nodes, ids: ids) }

        // The overlay: everyone within the bound, and the sessions form one connected whole.
        try await eventually("every node has its 4 neighbours", timeout: .seconds(60)) {
            try await nodes.asyncAllSatisfy { try await Self.connected($0).count == Self.maxPeers }
        }
        var graph: [String: Set<String>] = [:]
        for node in nodes { graph[try await node.nodeID()] = Set(try await Self.connected(node)) }
        for (node, peers) in graph {
            #expect(peers.count <= Self.maxPeers)
            for peer in peers { #expect(graph[peer]?.contains(node) == true, "a session is seen from one side only") }
        }
        var reached: Set<String> = [graph.keys.first!]
        var frontier = Array(reached)
        while let next = frontier.popLast() {
            for peer in graph[next] ?? [] where reached.insert(peer).inserted { frontier.append(peer) }
        }
        #expect(reached.count == Self.size, "the overlay is not connected: \(reached.count) of \(Self.size)")

        // A post reaches everyone, relayed (no node but four hears from the author directly), about once each.
        let author = nodes[0]
        let before = try await nodes.asyncMap { try await Self.recordsIn($0) }
        let post = try await author.cli("post", author.fixture("lake.png"), "--caption", "Hello, crowd")
        try await eventually("the post reaches all 12 nodes", timeout: .seconds(60)) {
            for node in nodes where !(try await Self.holds(node, post)) { return false }
            return true
        }
        let copies = try await zip(nodes, before).dropFirst().asyncMap { try await Self.recordsIn($0.0) - $0.1 }
        // One post (and nothing else new): each node received it about once, at most 1.5 times on average (issue 14's
        // target, as `continuum-bench crowd` measures it). A duplicate comes from a lazy neighbour that pulled the post
        // after a HAVE, before the tree's copy arrived (200 ms): under CI's load one run in five had 14 copies for 11
        // nodes ([1, 1, 1, 1, 1, 1, 2, 1, 3, 1, 1]), over the former bound of 13.
        #expect(copies.allSatisfy { $0 >= 1 }, "copies received: \(copies)")
        #expect(copies.reduce(0, +) * 2 <= Int64(Self.size - 1) * 3, "copies received: \(copies)")

        // A follower far from the commenter is pushed each comment once, and notified once.
        let follower = nodes[6]
        _ = try await follower.cli("follow", String(post.prefix(12)))
        try await Task.sleep(for: .seconds(2))
        var comments: [String] = []
        for index in 0..<3 {
            comments.append(try await nodes[3 + index].cli("comment", post, "comment \(index)"))
            try await Task.sleep(for: .milliseconds(300))
        }
        try await eventually("the follower is notified of the 3 comments") {
            try await follower.notifications().count == 3
        }
        try await Task.sleep(for: .seconds(2))
        let notified = try await follower.notifications()
        #expect(notified.count == 3, "exactly one notification per comment: \(notified)")
        #expect(Set(notified.map(\.record)) == Set(comments))
        // Pushed, each: except that a neighbour answering the follower's periodic round in the moment between
        // storing a comment and pushing it sends it in the round's answer (then not again), which the follower
        // counts as caught up. Under CI's load one run in four had one such comment: all three is not a rule of the
        // protocol, once each is, and a push that never happens fails here.
        #expect(notified.contains { $0.delivery == "push" }, "\(notified)")
        #expect(notified.allSatisfy { ["push", "catch-up"].contains($0.delivery) }, "\(notified)")

        // A third of the crowd crashes; the rest keep sharing, and the view closes over the gap.
        let crashed = [nodes[1], nodes[5], nodes[8], nodes[10]]
        for node in crashed { try await node.crash() }
        let survivors = nodes.filter { node in !crashed.contains { $0 === node } }
        let during = try await survivors[2].cli(
            "post",
            survivors[2].fixture("lake.png"),
            "--caption",
            "While they were away"
        )
        try await eventually("the survivors get the post written meanwhile", timeout: .seconds(90)) {
            for node in survivors where !(try await Self.holds(node, during)) { return false }
            return true
        }
        try await eventually("the survivors' overlay heals within the bound", timeout: .seconds(90)) {
            try await survivors.asyncAllSatisfy { (1...Self.maxPeers).contains(try await Self.connected($0).count) }
        }
        // They come back: nothing is lost, everyone holds everything.
        for node in crashed { try await Self.start(node, knowing: nodes, ids: ids) }
        try await eventually("the restarted nodes catch up", timeout: .seconds(90)) {
            for node in nodes {
                guard try await Self.holds(node, during), try await Self.holds(node, post) else { return false }
                let count = try await node.withStore { try await $0.post(PostID(hex: post)!)?.comments.count ?? 0 }
                if count != 3 { return false }
            }
            return true
        }
        try await eventually("every node is back within the bound", timeout: .seconds(60)) {
            try await nodes.asyncAllSatisfy { (1...Self.maxPeers).contains(try await Self.connected($0).count) }
        }
        for node in nodes { try await node.stop() }
    }

    @Test("a partition heals: two halves that did not know each other write apart, then meet and converge")
    func partitionHeals() async throws {
        let nodes = try await Self.crowd(8, prefix: "part")
        defer { for node in nodes { node.remove() } }
        var ids: [ObjectIdentifier: String] = [:]
        for node in nodes { ids[ObjectIdentifier(node)] = try await Self.address(node) }
        let left = Array(nodes.prefix(4))
        let right = Array(nodes.suffix(4))
        for node in left { try await Self.start(node, knowing: left, ids: ids) }
        for node in right { try await Self.start(node, knowing: right, ids: ids) }
        let fromLeft = try await left[0].cli("post", left[0].fixture("lake.png"), "--caption", "left side")
        let fromRight = try await right[0].cli("post", right[0].fixture("lake.png"), "--caption", "right side")
        try await eventually("each half has its own post") {
            for node in left where !(try await Self.holds(node, fromLeft)) { return false }
            for node in right where !(try await Self.holds(node, fromRight)) { return false }
            return true
        }
        for node in left { #expect(!(try await Self.holds(node, fromRight)), "the halves are apart") }

        // The partition heals: one node of the left learns of the right (as discovery would tell it once the link
        // is back). The halves meet through it, and everything reaches everyone.
        try await left[1].stop()
        try await Self.start(left[1], knowing: nodes, ids: ids)
        try await eventually("both posts reach all 8 nodes", timeout: .seconds(90)) {
            for node in nodes {
                guard try await Self.holds(node, fromLeft), try await Self.holds(node, fromRight) else { return false }
            }
            return true
        }
        for node in nodes { #expect(try await Self.connected(node).count <= Self.maxPeers) }
        for node in nodes { try await node.stop() }
    }

    /// Records received so far, over every session (`peers --json`).
    static func recordsIn(_ node: TestNode) async throws -> Int64 {
        let object = try JSONSerialization.jsonObject(with: Data(try await node.cli("peers", "--json").utf8))
        let peers = (object as? [String: Any])?["peers"] as? [[String: Any]] ?? []
        return peers.reduce(0) { $0 + (($1["recordsIn"] as? NSNumber)?.int64Value ?? 0) }
    }
}
