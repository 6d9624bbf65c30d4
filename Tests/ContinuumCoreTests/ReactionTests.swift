import ContinuumCore
import Foundation
import Testing

@Suite("Reactions (kind 13, PROTOCOL.md §2.9): a post, maybe a comment, and one byte")
struct ReactionTests {
    let alice = try! NodeIdentity(seed: [UInt8](repeating: 7, count: 32))
    let post = PostID(unchecked: Data(repeating: 0xAB, count: 32))
    let comment = CommentID(unchecked: Data(repeating: 0xCD, count: 32))

    func sign(_ body: RecordBody) throws -> VerifiedRecord {
        try alice.sign(
            RecordContent(
                author: alice.author,
                sequence: 1,
                previous: nil,
                createdAt: Timestamp(milliseconds: 1_700_000_000_000),
                body: body
            )
        )
    }

    /// Signs a record of kind 200 laid out as given, then writes 13 over its kind: the bytes a peer could send. The
    /// layout is refused before the signature is looked at.
    func asReaction(_ references: OpaqueReferences, payload: [UInt8]) throws -> String? {
        var bytes = try sign(.opaque(references, payload: payload)).bytes
        bytes[5] = 13
        do {
            _ = try SignedRecord(bytes: bytes)
            return nil
        } catch {
            return error.description
        }
    }

    @Test("a reaction to a comment: its bytes as §2.8 lays them out, read back as the same reaction")
    func layout() throws {
        let reaction = Reaction(post: post, comment: comment, emoji: .laugh)
        let record = try sign(reaction.body)
        let bytes = record.bytes
        // 54 + 32 (the post) + 2 + 32 (the comment) + 4 + 32 + 64, then the salt and one byte.
        #expect(bytes.count == 220 + 17)
        #expect(bytes[5] == 13)
        #expect(Array(bytes[54..<86]) == [UInt8](repeating: 0xAB, count: 32))
        #expect(Array(bytes[86..<88]) == [0, 32])
        #expect(Array(bytes[88..<120]) == [UInt8](repeating: 0xCD, count: 32))
        #expect(Array(bytes[120..<124]) == [0, 0, 0, 17])
        #expect(bytes.last == 3)
        let read = try SignedRecord(bytes: bytes).verify()
        #expect(read.id == record.id)
        #expect(read.body.flatMap(Reaction.init) == reaction)
        #expect(read.header.references.posts == [post])
    }

    @Test("to the post itself: no data; taken back: code 0")
    func postAndNone() throws {
        let record = try sign(Reaction(post: post, emoji: .none).body)
        #expect(record.bytes.count == 188 + 17)
        #expect(Array(record.bytes[86..<88]) == [0, 0])
        #expect(record.bytes.last == 0)
        #expect(record.body.flatMap(Reaction.init) == Reaction(post: post, emoji: .none))
    }

    @Test("refused on the wire: no post, data that is not a comment id, the post as its own comment, a bad code")
    func refused() throws {
        #expect(
            try asReaction(OpaqueReferences(code: 200, context: nil), payload: [1])
                == "malformed record: a reaction names the post it goes with"
        )
        #expect(
            try asReaction(OpaqueReferences(code: 200, context: post, data: [1, 2, 3]), payload: [1])
                == "out of range: a reaction's data is empty (for its post) or a comment's id (32 bytes), not 3 bytes"
        )
        #expect(
            try asReaction(OpaqueReferences(code: 200, context: post, data: Array(post.bytes)), payload: [1])
                == "malformed record: a reaction to the post itself has no data"
        )
        #expect(
            try asReaction(OpaqueReferences(code: 200, context: post), payload: [7])
                == "out of range: reaction code 7 must be 0 ... 6"
        )
        #expect(
            try asReaction(OpaqueReferences(code: 200, context: post), payload: [1, 1])
                == "out of range: content length 18 of a reaction must be 17"
        )
        #expect(
            try asReaction(OpaqueReferences(code: 200, context: post), payload: [])
                == "out of range: content length 0 of a reaction must be 17"
        )
    }

    @Test("refused when signing: the same rules")
    func refusedWhenSigning() {
        #expect(throws: RecordError.self) {
            try sign(.opaque(OpaqueReferences(code: 13, context: post), payload: [9]))
        }
        #expect(throws: RecordError.self) {
            try sign(.opaque(OpaqueReferences(code: 13, context: nil), payload: [1]))
        }
    }

    @Test("typed as emoji or name, with or without the variation selector; anything else is no reaction")
    func typed() {
        #expect(ReactionEmoji(typed: "❤️") == .heart)
        #expect(ReactionEmoji(typed: "\u{2764}") == .heart)
        #expect(ReactionEmoji(typed: "Heart") == .heart)
        #expect(ReactionEmoji(typed: "🙏") == .thanks)
        #expect(ReactionEmoji(typed: "wow") == .surprise)
        #expect(ReactionEmoji(typed: "none") == nil)
        #expect(ReactionEmoji(typed: "🎉") == nil)
        #expect(ReactionEmoji(typed: "") == nil)
    }
}
