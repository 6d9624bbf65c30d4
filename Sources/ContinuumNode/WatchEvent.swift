import ContinuumCore
import ContinuumStore
import ContinuumSync
import Foundation

extension ContinuumStore {
    /// The name `watch` shows for an author or a peer: its profile's display name, else the name it gave in
    /// HELLO; nil when neither is known (or the store cannot be read: the line then shows the id alone).
    public func nameForWatch(_ id: AuthorID) async -> String? {
        if let name = try? await displayName(of: id) { return name }
        return (try? await peerName(id)) ?? nil
    }
}

/// One event of the node's live stream, as `watch` prints it and `GET /api/events` sends it: JSON with a `type`,
/// the event's fields, the time, and a one-line `summary` for people (Docs/CLI.md lists every type).
public struct WatchEvent: Sendable, Encodable {
    public let event: SyncEvent
    public let at: Timestamp
    /// Display names of the authors and peers the event names, where known: the summary shows "Alice (d693128b…)"
    /// rather than the id alone, and the JSON adds `authorName` (`name` for peers).
    public let names: [AuthorID: String]

    public init(_ event: SyncEvent, at: Timestamp = .now(), names: [AuthorID: String] = [:]) {
        self.event = event
        self.at = at
        self.names = names
    }

    /// The event with the names of those it names, looked up once each.
    public static func named(
        _ event: SyncEvent,
        at: Timestamp = .now(),
        lookup: (AuthorID) async -> String?
    ) async -> WatchEvent {
        var names: [AuthorID: String] = [:]
        for id in Set(WatchEvent(event).involved) {
            if let name = await lookup(id) { names[id] = name }
        }
        return WatchEvent(event, at: at, names: names)
    }

    /// The authors and peers the event names by id.
    var involved: [AuthorID] {
        switch event {
        case .peerLeft(let peer, _), .recordsStored(let peer, _), .progress(let peer, _, _, _, _),
            .roundFinished(let peer, _):
            [peer]
        case .forkDetected(let fork): [fork.author]
        case .postAdded(_, let author, _), .commentAdded(_, _, let author, _), .postEdited(_, let author, _),
            .deleted(_, let author), .reacted(_, _, let author, _):
            [author]
        case .peerJoined, .joinRequested, .photoArrived, .photoSkipped, .photoProgress, .thumbnailArrived,
            .notification:
            []
        }
    }

    /// Someone named in a line: "Alice (d693128be063)" when the name is known, else the short id.
    func who(_ id: AuthorID) -> String { names[id].map { "\($0) (\(id.short))" } ?? id.short }

    /// Events worth a line in `watch` (photo progress is many per second; it is only shown with `--progress`).
    public var isFrequent: Bool {
        if case .photoProgress = event { true } else { false }
    }

    public var type: String {
        switch event {
        case .peerJoined: "peerJoined"
        case .peerLeft: "peerLeft"
        case .recordsStored: "recordsStored"
        case .progress: "syncProgress"
        case .roundFinished: "syncFinished"
        case .forkDetected: "fork"
        case .photoArrived: "photoArrived"
        case .photoSkipped: "photoSkipped"
        case .photoProgress: "photoProgress"
        case .thumbnailArrived: "thumbnailArrived"
        case .postAdded: "post"
        case .commentAdded: "comment"
        case .postEdited: "postEdited"
        case .deleted: "deleted"
        case .reacted: "reaction"
        case .notification: "notification"
        case .joinRequested: "joinRequested"
        }
    }

    /// The event in one line of text.
    public var summary: String {
        switch event {
        case .peerJoined(let peer, let name): "peer joined: \(name ?? "(no name)") \(peer.short)"
        case .peerLeft(let peer, let reason): "peer left: \(who(peer)) (\(reason))"
        case .recordsStored(let peer, let count): "received \(count) record\(count == 1 ? "" : "s") from \(who(peer))"
        case .progress(let peer, let records, let ofRecords, _, _):
            "sync with \(who(peer)): \(records) of \(ofRecords) records"
        case .roundFinished(let peer, _): "sync with \(who(peer)) finished"
        case .forkDetected(let fork): "fork detected: author \(who(fork.author)) at \(fork.sequence)"
        case .photoArrived(let hash): "photo \(hash.short) complete"
        case .photoSkipped(let hash, let bytes):
            "photo \(hash.short) skipped: \(bytes / 1_048_576) MiB is over --max-photo-mb (fetch it with 'fetch')"
        case .photoProgress(let hash, let bytes, let total): "photo \(hash.short): \(bytes) of \(total) bytes"
        case .thumbnailArrived(let hash): "thumbnail of photo \(hash.short) here"
        case .postAdded(let post, let author, let caption): "new post \(post.short) by \(who(author)): \(caption)"
        case .commentAdded(_, let post, let author, let text): "comment on \(post.short) by \(who(author)): \(text)"
        case .postEdited(let post, let author, let caption):
            "post \(post.short) edited by \(who(author)): \(caption ?? "new photo or location; same caption")"
        case .deleted(let targets, let author):
            "deleted by \(who(author)): \(targets.map(\.short).joined(separator: ", "))"
        case .reacted(let post, let target, let author, let emoji):
            emoji == .none
                ? "\(who(author)) took back a reaction to \(target == post.record ? "post" : "a comment on") \(post.short)"
                : "\(who(author)) reacted \(emoji.symbol) to \(target == post.record ? "post" : "a comment on") \(post.short)"
        case .notification(let notification): Self.describe(notification)
        case .joinRequested(let peer, let name):
            "\(name ?? "a node") (\(peer.short)) asks to join: 'continuum-node approve \(peer.short)' or 'deny'"
        }
    }

    static func describe(_ notification: NotificationSummary) -> String {
        let who = notification.authorName ?? notification.author?.short ?? "someone"
        let offline = notification.whileOffline ? " (while you were offline)" : ""
        let post = notification.post.short
        // A comment names its post by the post's caption while it has one ("Lake at dawn"), else by its id.
        let commented = notification.about?.caption != nil ? notification.about?.title ?? post : post
        // A text its author erased (the post or comment deleted since) is named by what is left.
        let erased = notification.about?.deleted == true ? "deleted since" : "no text"
        return switch notification.kind {
        case .comment: "\(who) commented on \(commented): \(notification.text ?? "(\(erased))")\(offline)"
        case .edited:
            if let text = notification.text {
                "\(who) edited \(post): \(text)\(offline)"
            } else {
                "\(who) edited \(post) (\(notification.about?.deleted == true ? "deleted since" : "photo or location"))\(offline)"
            }
        case .deleted:
            "\(who) deleted a post you follow: \(notification.about?.words ?? "post \(post)")\(offline)"
        case .post: "\(who) posted \(post): \(notification.text ?? "(\(erased))")\(offline)"
        case .reaction:
            "\(who) reacted \(notification.text ?? "(\(erased))") to "
                + "\(notification.reactedComment == nil ? "" : "your comment on ")\(commented)\(offline)"
        }
    }

    enum CodingKeys: String, CodingKey {
        case type, at, summary, peer, name, reason, count, records, ofRecords, bytes, ofBytes, round, fork, sha256
        case post, comment, author, authorName, caption, text, targets, notification, target, reaction, emoji
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(type, forKey: .type)
        try container.encode(RFC3339Time(at), forKey: .at)
        try container.encode(summary, forKey: .summary)
        try encodeFields(into: &container)
    }

    /// Encodes the fields of this kind of event, the ones after `type`, `at` and `summary`.
    private func encodeFields(into container: inout KeyedEncodingContainer<CodingKeys>) throws {
        switch event {
        case .peerJoined(let peer, let name), .joinRequested(let peer, let name):
            try container.encode(peer, forKey: .peer)
            try container.encode(name, forKey: .name)
        case .peerLeft(let peer, let reason):
            try encode(peer: peer, into: &container)
            try container.encode(reason, forKey: .reason)
        case .recordsStored(let peer, let count):
            try encode(peer: peer, into: &container)
            try container.encode(count, forKey: .count)
        case .progress(let peer, let records, let ofRecords, let bytes, let ofBytes):
            try encode(peer: peer, into: &container)
            try container.encode(records, forKey: .records)
            try container.encode(ofRecords, forKey: .ofRecords)
            try container.encode(bytes, forKey: .bytes)
            try container.encode(ofBytes, forKey: .ofBytes)
        case .roundFinished(let peer, let round):
            try encode(peer: peer, into: &container)
            try container.encode(round, forKey: .round)
        case .forkDetected(let fork):
            try container.encode(ForkJSON(fork), forKey: .fork)
        case .photoArrived(let hash), .thumbnailArrived(let hash):
            try container.encode(hash, forKey: .sha256)
        case .photoSkipped(let hash, let bytes):
            try container.encode(hash, forKey: .sha256)
            try container.encode(bytes, forKey: .bytes)
        case .photoProgress(let hash, let bytes, let total):
            try container.encode(hash, forKey: .sha256)
            try container.encode(bytes, forKey: .bytes)
            try container.encode(total, forKey: .ofBytes)
        case .postAdded(let post, let author, let caption):
            try container.encode(post, forKey: .post)
            try encode(author: author, into: &container)
            try container.encode(caption, forKey: .caption)
        case .commentAdded(let comment, let post, let author, let text):
            try container.encode(comment, forKey: .comment)
            try container.encode(post, forKey: .post)
            try encode(author: author, into: &container)
            try container.encode(text, forKey: .text)
        case .postEdited(let post, let author, let caption):
            try container.encode(post, forKey: .post)
            try encode(author: author, into: &container)
            try container.encode(caption, forKey: .caption)
        case .deleted(let targets, let author):
            try container.encode(targets, forKey: .targets)
            try encode(author: author, into: &container)
        case .reacted(let post, let target, let author, let emoji):
            try container.encode(post, forKey: .post)
            try container.encode(target, forKey: .target)
            try encode(author: author, into: &container)
            try container.encode(emoji.name, forKey: .reaction)
            try container.encode(emoji.symbol, forKey: .emoji)
        case .notification(let notification):
            try container.encode(NotificationJSON(notification), forKey: .notification)
        }
    }

    /// Encodes a peer's id as `peer` and, when known, its display name as `name`.
    private func encode(peer: AuthorID, into container: inout KeyedEncodingContainer<CodingKeys>) throws {
        try container.encode(peer, forKey: .peer)
        try container.encodeIfPresent(names[peer], forKey: .name)
    }

    /// Encodes an author's id as `author` and, when known, its display name as `authorName`.
    private func encode(author: AuthorID, into container: inout KeyedEncodingContainer<CodingKeys>) throws {
        try container.encode(author, forKey: .author)
        try container.encodeIfPresent(names[author], forKey: .authorName)
    }

    /// The event as one line of JSON (keys sorted), without the newline.
    public func jsonLine() throws -> Data { try JSONEncoder.frontEnd().encode(self) }

    /// The first line of `watch`: which node is watched, from when.
    public struct Watching: Sendable, Encodable {
        let type = "watching"
        let at: RFC3339Time
        let node: AuthorID
        public let summary: String

        public init(node: AuthorID, at: Timestamp) {
            self.at = RFC3339Time(at)
            self.node = node
            summary = "watching node \(node.short)"
        }
    }

    /// What `watch` reads of each line the node sends (it prints the line itself with `--json`).
    public struct Line: Sendable, Decodable {
        public let type: String
        /// RFC 3339.
        public let at: String
        public let summary: String
    }
}
