import Foundation

/// One of the fixed set of reactions (PROTOCOL.md §2.9), with its code in a reaction record's content. `none` takes a
/// person's reaction back.
public enum ReactionEmoji: UInt8, Sendable, CaseIterable, Codable {
    case none = 0
    case heart = 1
    case thumbsUp = 2
    case laugh = 3
    case surprise = 4
    case sad = 5
    case thanks = 6

    /// The emoji shown, or an empty string for `none`.
    public var symbol: String {
        switch self {
        case .none: ""
        case .heart: "\u{2764}\u{FE0F}"
        case .thumbsUp: "\u{1F44D}"
        case .laugh: "\u{1F602}"
        case .surprise: "\u{1F62E}"
        case .sad: "\u{1F622}"
        case .thanks: "\u{1F64F}"
        }
    }

    /// The name used in JSON and typed at the command line where an emoji is awkward.
    public var name: String {
        switch self {
        case .none: "none"
        case .heart: "heart"
        case .thumbsUp: "thumbsup"
        case .laugh: "laugh"
        case .surprise: "wow"
        case .sad: "sad"
        case .thanks: "thanks"
        }
    }

    /// The reactions a person can give, in the order they are shown.
    public static let shown: [ReactionEmoji] = [.heart, .thumbsUp, .laugh, .surprise, .sad, .thanks]

    /// Reads a reaction as a person types it: the emoji itself (with or without its variation selector) or its name.
    public init?(typed: String) {
        let plain = typed.trimmingCharacters(in: .whitespaces)
        let bare = plain.replacingOccurrences(of: "\u{FE0F}", with: "")
        guard
            let found = Self.shown.first(where: {
                $0.name == plain.lowercased() || $0.symbol.replacingOccurrences(of: "\u{FE0F}", with: "") == bare
            })
        else { return nil }
        self = found
    }
}

/// A reaction record (kind 13, PROTOCOL.md §2.9): a person's reaction to a post or to a comment on it. It is laid out
/// as every kind from 8 on (§2.8): `context` is the post, `data` is empty for the post itself or the comment's id, and
/// the content is the salt and one byte, the emoji's code. A later reaction of the same author to the same record
/// replaces it; `none` takes it back. It goes with its post: the post's delete erases it.
public struct Reaction: Sendable, Hashable {
    /// The kind's code in a record header.
    public static let code: UInt8 = 13
    /// The content's length, salt included.
    public static let contentBytes = 17

    /// The post reacted to, or the post of the comment reacted to.
    public var post: PostID
    /// The comment reacted to; nil for the post itself.
    public var comment: CommentID?
    public var emoji: ReactionEmoji

    public init(post: PostID, comment: CommentID? = nil, emoji: ReactionEmoji) {
        self.post = post
        self.comment = comment
        self.emoji = emoji
    }

    /// The record reacted to: the comment, or the post.
    public var target: RecordID { RecordID(unchecked: comment?.bytes ?? post.bytes) }

    /// The record body that carries this reaction.
    public var body: RecordBody {
        .opaque(
            OpaqueReferences(code: Self.code, context: post, data: comment.map { Array($0.bytes) } ?? []),
            payload: [emoji.rawValue]
        )
    }

    /// Reads a reaction from a record of kind 13 held whole; nil for any other kind, a header alone, or a record of
    /// kind 13 that breaks the kind's rules (PROTOCOL.md §2.9: it is inert, kept and passed on, never a reaction).
    public init?(_ body: RecordBody) {
        guard case .opaque(let references, let payload) = body, references.code == Self.code,
            let post = references.context, let code = payload.first, let emoji = ReactionEmoji(rawValue: code),
            payload.count == 1, references.data.isEmpty || references.data.count == 32,
            Data(references.data) != post.bytes
        else { return nil }
        self.init(
            post: post,
            comment: references.data.isEmpty ? nil : CommentID(unchecked: Data(references.data)),
            emoji: emoji
        )
    }

    /// Checks the rules of a kind from 8 on that this node knows (§2.9), before it signs such a record: a record that
    /// breaks them is valid (§2.8) but inert, and a node never signs one.
    public static func checkKindRules(_ body: RecordBody) throws(RecordError) {
        guard case .opaque(let references, let payload) = body, references.code == code else { return }
        try check(references, contentLength: UInt32(RecordFormat.saltBytes + payload.count))
        try check(payload: payload)
    }

    /// The header's rules of a reaction, checked when this node signs one: a post, an empty or 32-byte `data`, and a
    /// content of exactly 17 bytes.
    static func check(_ references: OpaqueReferences, contentLength: UInt32) throws(RecordError) {
        guard references.context != nil else { throw .malformed("a reaction names the post it goes with") }
        guard references.data.isEmpty || references.data.count == 32 else {
            throw .outOfRange(
                "a reaction's data is empty (for its post) or a comment's id (32 bytes), not \(references.data.count) bytes"
            )
        }
        guard references.data.count != 32 || Data(references.data) != references.context?.bytes else {
            throw .malformed("a reaction to the post itself has no data")
        }
        guard contentLength == UInt32(contentBytes) else {
            throw .outOfRange("content length \(contentLength) of a reaction must be \(contentBytes)")
        }
    }

    /// The content's rule of a reaction, checked when this node signs one: one byte, a known emoji code.
    static func check(payload: [UInt8]) throws(RecordError) {
        guard payload.count == 1 else {
            throw .malformed("a reaction's content is its salt and one byte, not \(payload.count) bytes")
        }
        guard ReactionEmoji(rawValue: payload[0]) != nil else {
            throw .outOfRange("reaction code \(payload[0]) must be 0 ... 6")
        }
    }
}
