import ContinuumCore
import ContinuumDiscovery
import ContinuumNode
import ContinuumSession
import ContinuumSync
import Foundation
import Testing

@Suite("The front ends' JSON and the control socket's messages")
struct FrontEndJSONTests {
    let node = AuthorID(hex: String(repeating: "5a", count: 32))!
    let at = Timestamp(milliseconds: 1_795_314_291_171)

    func line(_ value: some Encodable) throws -> String {
        String(decoding: try JSONEncoder.frontEnd().encode(value), as: UTF8.self)
    }

    @Test("a time is RFC 3339 in UTC with milliseconds; a nullable field is null, never left out")
    func timesAndNulls() throws {
        #expect(try line([RFC3339Time(at)]) == #"["2026-11-22T02:24:51.171Z"]"#)
        #expect(
            try line(DiscoveryJSON(DiscoveryStatus(state: .off))) == """
                {"lastError":null,"openGroups":[],"otherNetworksSeen":0,"peersPresent":0,"peersSeen":0,"serviceName":null,"state":"off"}
                """
        )
    }

    @Test("watch lines are as Docs/CLI.md shows them")
    func watchLines() throws {
        let hex = node.hex
        #expect(
            try line(WatchEvent.Watching(node: node, at: at)) == """
                {"at":"2026-11-22T02:24:51.171Z","node":"\(hex)","summary":"watching node 5a5a5a5a5a5a","type":"watching"}
                """
        )
        let joined = String(decoding: try WatchEvent(.peerJoined(node, name: nil), at: at).jsonLine(), as: UTF8.self)
        #expect(
            joined == """
                {"at":"2026-11-22T02:24:51.171Z","name":null,"peer":"\(hex)","summary":"peer joined: (no name) 5a5a5a5a5a5a",\
                "type":"peerJoined"}
                """
        )
        let decoded = try JSONDecoder().decode(WatchEvent.Line.self, from: Data(joined.utf8))
        #expect(decoded.type == "peerJoined" && decoded.at == "2026-11-22T02:24:51.171Z")
    }

    @Test("watch names authors and peers by their names, and a comment's post by its caption")
    func watchNames() throws {
        let post = PostID(unchecked: Data(repeating: 0x3F, count: 32))
        let added = WatchEvent(.postAdded(post, author: node, caption: "Lake"), at: at, names: [node: "Alice"])
        #expect(added.summary == "new post 3f3f3f3f3f3f by Alice (5a5a5a5a5a5a): Lake")
        #expect(try line(added).contains("\"authorName\":\"Alice\""))
        // A name not known: the id alone, and no authorName.
        let unnamed = WatchEvent(.postAdded(post, author: node, caption: "Lake"), at: at)
        #expect(unnamed.summary == "new post 3f3f3f3f3f3f by 5a5a5a5a5a5a: Lake")
        #expect(!(try line(unnamed).contains("authorName")))
        let stored = WatchEvent(.recordsStored(from: node, count: 3), at: at, names: [node: "Bob"])
        #expect(stored.summary == "received 3 records from Bob (5a5a5a5a5a5a)")
        #expect(try line(stored).contains("\"name\":\"Bob\""))

        var comment = NotificationSummary(
            id: 1,
            kind: .comment,
            post: post,
            record: RecordID(unchecked: Data(repeating: 1, count: 32)),
            author: node,
            authorName: "Bob",
            text: "Great light",
            createdAt: at,
            read: false,
            whileOffline: false,
            delivery: .push
        )
        let long = "Waterfall at dusk,\nupper falls, seen from the bridge after the long walk up the valley"
        comment.about = PostHeadline(
            author: node,
            authorName: "Alice",
            postedAt: at,
            commentCount: 1,
            deleted: false,
            caption: long
        )
        #expect(
            WatchEvent(.notification(comment)).summary
                == "Bob commented on \"Waterfall at dusk, upper falls, seen from the bridge after …\": Great light"
        )
        // Once the post is deleted its caption is erased: the id names it.
        comment.about = PostHeadline(
            author: node,
            authorName: "Alice",
            postedAt: at,
            commentCount: 1,
            deleted: true,
            caption: long
        )
        #expect(WatchEvent(.notification(comment)).summary.hasPrefix("Bob commented on 3f3f3f3f3f3f: "))
    }

    @Test("every control request and reply survives the socket")
    func controlMessages() throws {
        let photo = AssetHash.of(Data("photo".utf8))
        let requests: [ControlRequest] = [
            .sync, .fetch(photo: photo), .connected, .stored, .followsChanged, .watch, .discovery,
        ]
        for request in requests {
            #expect(try JSONDecoder().decode(ControlRequest.self, from: JSONEncoder().encode(request)) == request)
        }
        let replies: [ControlReply] = [
            .failed("no peer is connected"), .ok,
            .syncProgress(peer: node, records: 1, ofRecords: 2, bytes: 3, ofBytes: 4),
            .synced(peers: 2, completed: 1), .photoProgress(bytes: 5, ofBytes: 6), .photoStored(path: "/a/b"),
            .connected(peers: [node], interest: [node: 3], traffic: [node: LiveTraffic(stats(recordsIn: 4))]),
            .watching(node: node, at: at),
            .discovery(DiscoveryStatus(state: .unavailable, lastError: "no daemon", peersSeen: 1)),
        ]
        for reply in replies {
            #expect(try JSONDecoder().decode(ControlReply.self, from: JSONEncoder().encode(reply)) == reply)
        }
        #expect(ControlReply.failed("no peer is connected").failure?.description == "no peer is connected")
        #expect(ControlReply.ok.failure == nil)
    }
}

/// Session counters with `recordsIn` set, the rest zero.
private func stats(recordsIn: Int64) -> SessionStats {
    var stats = SessionStats()
    stats.recordsIn = recordsIn
    return stats
}
