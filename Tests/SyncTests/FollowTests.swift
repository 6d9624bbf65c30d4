import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import ContinuumWire
import Foundation
import Testing

/// Follow, push and notifications between real nodes on loopback. Anti-entropy rounds run only on connect
/// (`--anti-entropy-interval 600`), so what arrives later arrives by live gossip or by push; the notifications
/// record which one (`delivery`).
@Suite("Follow a post: pushes, relays, notifications", .serialized)
struct FollowTests {
    static let slowRounds = ["--anti-entropy-interval", "600"]

    @Test("a comment on a followed post is pushed, also through a node that does not follow it; one notification")
    func pushAndRelay() async throws {
        let a = try await TestNode("a")
        let b = try await TestNode("b")
        let c = try await TestNode("c")
        defer { for node in [a, b, c] { node.remove() } }
        try await a.start(extra: Self.slowRounds)
        try await b.start(peers: [a], extra: Self.slowRounds)
        try await c.start(peers: [b], extra: Self.slowRounds)
        let post = try await a.cli("post", a.fixture("lake.png"), "--caption", "Follow me")
        try await eventually("the post reaches C") { try await c.postIDs().map(\.hex) == [post] }

        // A follows its own post automatically; C follows it by hand. B does not follow it.
        #expect(try await a.following() == [post])
        #expect(try await c.cli("follow", String(post.prefix(10))) == "following \(post.prefix(12))")
        #expect(try await b.following().isEmpty)
        let cID = try await c.nodeID()
        let bID = try await b.nodeID()
        try await eventually("B knows C wants pushes, and relays that interest to A") {
            let relayed = try await b.pushInterest(of: cID)
            let relayedTo = try await a.pushInterest(of: bID)
            return relayed == 1 && relayedTo == 1
        }

        // B comments: pushed straight to C (and to A, which follows its own post).
        let fromB = try await b.cli("comment", post, "B was here")
        try await eventually("C is notified of B's comment") { try await c.notifications().count == 1 }
        // A comments: A -> B -> C, pushed at each hop although B follows nothing.
        let fromA = try await a.cli("comment", post, "A answers")
        try await eventually("C is notified of A's comment") { try await c.notifications().count == 2 }
        try await eventually("A is notified of B's comment") { try await a.notifications().count == 1 }

        let onC = try await c.notifications()
        #expect(onC.map(\.record).sorted() == [fromA, fromB].sorted())
        #expect(onC.allSatisfy { $0.kind == "comment" && $0.delivery == "push" && !$0.whileOffline }, "\(onC)")
        let onA = try await a.notifications()
        #expect(onA.map(\.record) == [fromB], "A's own comment does not notify A")
        #expect(onA.first?.delivery == "push")
        #expect(try await b.notifications().isEmpty, "B follows nothing")

        // Unfollow: the interest is withdrawn along the path, and later comments notify nobody on C.
        #expect(try await c.cli("unfollow", post) == "no longer following \(post.prefix(12))")
        try await eventually("the interest is withdrawn on B and on A") {
            let relayed = try await b.pushInterest(of: cID)
            let relayedTo = try await a.pushInterest(of: bID)
            return relayed == 0 && relayedTo == 0
        }
        let after = try await b.cli("comment", post, "nobody on C hears of this")
        try await eventually("the comment still reaches C by gossip") {
            try await c.withStore { try await $0.post(PostID(hex: post)!)?.comments.count } == 3
        }
        try await eventually("and A, which still follows") { try await a.notifications().count == 2 }
        #expect(try await c.notifications().count == 2, "no notification after unfollowing")
        #expect(try await a.notifications().first?.record == after)
        for node in [a, b, c] { try await node.stop() }
    }

    @Test("in a cycle of three nodes, interest withdrawn by the follower dies out everywhere (hop limit)")
    func cycleWithdrawal() async throws {
        let a = try await TestNode("a")
        let b = try await TestNode("b")
        let c = try await TestNode("c")
        defer { for node in [a, b, c] { node.remove() } }
        try await a.start(extra: Self.slowRounds)
        try await b.start(peers: [a], extra: Self.slowRounds)
        try await c.start(peers: [a, b], extra: Self.slowRounds)
        let post = try await a.cli("post", a.fixture("lake.png"), "--caption", "Round and round", "--no-auto-follow")
        try await eventually("the post reaches C") { try await c.postIDs().map(\.hex) == [post] }
        let ids = try await [a, b, c].asyncMap { try await $0.nodeID() }
        /// Every node's view of how many posts each of its two peers wants pushed.
        func interest() async throws -> [Int?] {
            try await [(a, 1), (a, 2), (b, 0), (b, 2), (c, 0), (c, 1)].asyncMap {
                try await $0.pushInterest(of: ids[$1])
            }
        }
        try await eventually("a triangle of sessions, nobody following") { try await interest() == [0, 0, 0, 0, 0, 0] }
        try await c.cli("follow", post)
        try await eventually("C's interest reaches A and B, and goes round the cycle") {
            try await interest() == [1, 1, 1, 1, 1, 1]
        }
        try await c.cli("unfollow", post)
        try await eventually("after the withdrawal no node wants the post pushed any more", timeout: .seconds(20)) {
            try await interest() == [0, 0, 0, 0, 0, 0]
        }
        for node in [a, b, c] { try await node.stop() }
    }

    @Test("a follower offline during three comments gets three notifications on return; follows survive restarts")
    func offlineFollower() async throws {
        let a = try await TestNode("a")
        let c = try await TestNode("c")
        defer { for node in [a, c] { node.remove() } }
        try await a.start(extra: Self.slowRounds)
        try await c.start(peers: [a], extra: Self.slowRounds)
        let post = try await a.cli("post", a.fixture("lake.png"), "--caption", "Comment while C sleeps")
        try await eventually("the post reaches C") { try await c.postIDs().map(\.hex) == [post] }
        #expect(try await c.cli("follow", post) == "following \(post.prefix(12))")
        // Following twice is following once.
        #expect(try await c.cli("follow", post) == "already following \(post.prefix(12))")
        #expect(try await c.following() == [post])

        try await c.stop()
        let comments = try await (1...3).asyncMap { try await a.cli("comment", post, "comment \($0) while C is away") }
        try await c.start(peers: [a], extra: Self.slowRounds)
        try await eventually("C has the three comments") {
            try await c.withStore { try await $0.post(PostID(hex: post)!)?.comments.count } == 3
        }
        try await eventually("three notifications") { try await c.notifications().count == 3 }
        let caughtUp = try await c.notifications()
        #expect(caughtUp.map(\.record).sorted() == comments.sorted())
        #expect(caughtUp.allSatisfy { $0.whileOffline && $0.delivery == "catch-up" }, "\(caughtUp)")
        #expect(try await c.following() == [post], "the follow survived the restart")

        // After the restart the interest is announced again: the next comment is pushed.
        let aID = try await a.nodeID()
        let cID = try await c.nodeID()
        try await eventually("A knows C wants pushes again") { try await a.pushInterest(of: cID) == 1 }
        _ = aID
        let live = try await a.cli("comment", post, "welcome back")
        try await eventually("a fourth notification") { try await c.notifications().count == 4 }
        #expect(try await c.notifications().first.map { [$0.record, $0.delivery] } == [live, "push"])

        // The author edits, then deletes the post: one notification each.
        try await a.cli("edit", post, "--caption", "Edited caption")
        try await eventually("C is notified of the edit") { try await c.notifications().count == 5 }
        #expect(try await c.notifications().first.map { [$0.kind, $0.text ?? ""] } == ["edited", "Edited caption"])
        try await a.cli("delete", post)
        try await eventually("C is notified of the deletion") { try await c.notifications().count == 6 }
        #expect(try await c.notifications().first?.kind == "deleted")
        #expect(try await c.cli("following", "--json").contains("\"deleted\" : true"))

        // Marking read.
        let unread = try await c.cli("notifications", "--unread", "--json")
        #expect(unread.components(separatedBy: "\"read\" : false").count == 7)
        let newest = try #require(try await c.notifications().first?.id)
        #expect(try await c.cli("notifications", "--mark-read", "\(newest)") == "marked 1 read; 5 unread")
        #expect(try await c.cli("notifications", "--mark-read", "--all") == "marked 5 read; 0 unread")
        #expect(try await c.cli("notifications", "--unread") == "No unread notifications.")
        for node in [a, c] { try await node.stop() }
    }

    @Test("the same comment by push and again by anti-entropy notifies once")
    func pushThenCatchUp() async throws {
        let node = try await TestNode("follower")
        defer { node.remove() }
        try await node.start(extra: ["--insecure-plaintext"] + Self.slowRounds)
        let author = NodeIdentity.generate()
        let other = NodeIdentity.generate()
        let photo = TestPhoto.reference("a photo nobody sends")
        // Both logs start with their self-adds to the test network, so that the node takes their records.
        let authorJoin = try RawClient.selfAdd(author)
        let otherJoin = try RawClient.selfAdd(other)
        let post = try author.sign(
            RecordContent(
                author: author.author,
                sequence: 2,
                previous: authorJoin.id,
                createdAt: .now(),
                body: .post(caption: "a post from a raw peer", photo: photo, location: nil)
            )
        )
        let postID = PostID(post.id)
        let comment = try other.sign(
            RecordContent(
                author: other.author,
                sequence: 2,
                previous: otherJoin.id,
                createdAt: .now(),
                body: .comment(post: postID, text: "twice delivered")
            )
        )
        let client = try await RawClient.handshake(port: node.port, identity: author)
        try client.send(.records(live: true, [authorJoin.bytes, post.bytes, otherJoin.bytes]))
        try await eventually("the node has the post") { try await node.postIDs() == [postID] }
        try await node.cli("follow", postID.hex)
        try await client.read(timeout: .seconds(10)) { messages in
            messages.contains { message in
                if case .interest(_, let entries) = message {
                    entries.contains { $0.post == postID && $0.hops == 0 }
                } else {
                    false
                }
            }
        }
        try client.send(.push([comment.bytes]))
        try await eventually("one notification") { try await node.notifications().count == 1 }
        try client.send(.records(live: false, [comment.bytes]))
        try client.send(.records(live: true, [comment.bytes]))
        try client.send(.push([comment.bytes]))
        try client.send(.ping(7))
        try await client.read(timeout: .seconds(10)) { messages in
            messages.contains { $0 == .pong(7) }
        }
        let notifications = try await node.notifications()
        #expect(notifications.count == 1, "\(notifications)")
        #expect(notifications.first?.delivery == "push")
        #expect(notifications.first?.record == comment.id.hex)
        try await node.stop()
    }

    @Test("watch streams new posts, comments and notifications as JSON lines")
    func watch() async throws {
        let a = try await TestNode("a")
        let b = try await TestNode("b")
        defer { for node in [a, b] { node.remove() } }
        try await a.start(extra: Self.slowRounds)
        try await b.start(peers: [a], extra: Self.slowRounds + ["--notify-new-posts"])
        try await eventually("connected") { try await a.pushInterest(of: try await b.nodeID()) == 0 }
        let watcher = try b.watch()
        defer { watcher.stop() }
        // --desktop without notify-send says so, once, and watches all the same.
        let desktop = try b.watch(["--desktop"], environment: ["PATH": "/nonexistent"])
        defer { desktop.stop() }
        // With a notify-send on PATH (a script that records its arguments), each notification is raised.
        let bin = b.data.appendingPathComponent("fake-bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        let raised = b.data.appendingPathComponent("raised.txt")
        let script = bin.appendingPathComponent("notify-send")
        try "#!/bin/sh\nprintf '%s|' \"$@\" >> \(raised.path)\necho >> \(raised.path)\n".write(
            to: script,
            atomically: true,
            encoding: .utf8
        )
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script.path)
        let raising = try b.watch(["--desktop"], environment: ["PATH": "\(bin.path):/usr/bin:/bin"])
        defer { raising.stop() }
        try await eventually("both --desktop watchers are subscribed") {
            desktop.lines.contains { $0.contains("\"watching\"") }
                && raising.lines.contains { $0.contains("\"watching\"") }
        }
        try await eventually("watch is subscribed") { watcher.lines.contains { $0.contains("\"watching\"") } }
        let post = try await a.cli("post", a.fixture("lake.png"), "--caption", "Watch this")
        try await b.cli("follow", post)
        let comment = try await a.cli("comment", post, "and this")
        try await eventually("watch shows the post, the photo, the comment and the notifications") {
            let types = watcher.events.compactMap { $0["type"] as? String }
            return types.contains("post") && types.contains("photoArrived") && types.contains("comment")
                && watcher.events.filter { $0["type"] as? String == "notification" }.count == 2
        }
        let events = watcher.events
        let postEvent = events.first { $0["type"] as? String == "post" }
        #expect(postEvent?["post"] as? String == post)
        #expect(postEvent?["caption"] as? String == "Watch this")
        let commentEvent = events.first { $0["type"] as? String == "comment" }
        #expect(commentEvent?["comment"] as? String == comment)
        let kinds = events.filter { $0["type"] as? String == "notification" }
            .compactMap { ($0["notification"] as? [String: Any])?["kind"] as? String }
        #expect(kinds == ["post", "comment"], "a new post notifies with --notify-new-posts")
        #expect(desktop.stderr.contains("notify-send was not found"), "stderr: \(desktop.stderr)")
        #expect(raising.stderr.isEmpty, "stderr: \(raising.stderr)")
        try await eventually("notify-send was run for both notifications") {
            let lines = ((try? String(contentsOf: raised, encoding: .utf8)) ?? "").split(separator: "\n")
            return lines.count == 2 && lines[1].contains("commented on \"Watch this\": and this")
        }
        try await eventually("the --desktop watcher shows the notifications too") {
            desktop.events.filter { $0["type"] as? String == "notification" }.count == 2
        }
        try await a.stop()
        try await eventually("watch shows the peer leaving") {
            watcher.events.contains { $0["type"] as? String == "peerLeft" }
        }
        try await b.stop()
    }
}

/// A notification as `notifications --json` shows it.
struct ShownNotification: Decodable, CustomStringConvertible {
    let id: Int64
    let kind: String
    let post: String
    let record: String
    let text: String?
    let whileOffline: Bool
    let delivery: String
    let read: Bool

    var description: String { "#\(id) \(kind) \(record.prefix(8)) \(delivery)\(whileOffline ? " offline" : "")" }
}

extension TestNode {
    /// `notifications --json`, newest first.
    func notifications() async throws -> [ShownNotification] {
        struct List: Decodable { let notifications: [ShownNotification] }
        return try JSONDecoder().decode(List.self, from: Data(try await cli("notifications", "--json").utf8))
            .notifications
    }

    /// The followed posts' ids, from `following --json`.
    func following() async throws -> [String] {
        struct Entry: Decodable { let post: String }
        struct List: Decodable { let following: [Entry] }
        return try JSONDecoder().decode(List.self, from: Data(try await cli("following", "--json").utf8)).following.map(
            \.post
        )
    }

    func nodeID() async throws -> String {
        let status = try JSONSerialization.jsonObject(with: Data(try await cli("status", "--json").utf8))
        let id = ((status as? [String: Any])?["node"] as? [String: Any])?["id"] as? String
        return try #require(id)
    }

    /// How many posts the connected peer `id` asked this node to push (nil when not connected).
    func pushInterest(of id: String) async throws -> Int? {
        let object = try JSONSerialization.jsonObject(with: Data(try await cli("peers", "--json").utf8))
        let peers = (object as? [String: Any])?["peers"] as? [[String: Any]] ?? []
        return peers.first { $0["id"] as? String == id }?["pushInterest"] as? Int
    }

    /// Starts `watch --json` on this node's data directory.
    func watch(_ extra: [String] = [], environment: [String: String]? = nil) throws -> Watcher {
        try Watcher(data: data, extra: extra, environment: environment)
    }
}

/// A running `watch --json` process and the lines it printed.
final class Watcher {
    private let process = Process()
    private let output: URL
    private let errors: URL

    init(data: URL, extra: [String] = [], environment: [String: String]? = nil) throws {
        let name = UUID().uuidString
        output = data.appendingPathComponent("watch-\(name).out")
        errors = data.appendingPathComponent("watch-\(name).err")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        process.executableURL = NodeBinary.url
        process.arguments = ["watch", "--json", "--data", data.path] + extra
        if let environment { process.environment = environment }
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = try FileHandle(forWritingTo: errors)
        try process.run()
    }

    var stderr: String { (try? String(contentsOf: errors, encoding: .utf8)) ?? "" }

    var lines: [String] {
        ((try? String(contentsOf: output, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    var events: [[String: Any]] {
        lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    func stop() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }
}
