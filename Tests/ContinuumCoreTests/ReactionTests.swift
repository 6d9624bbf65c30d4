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

    /// Signs a record of kind 200 laid out as given, then writes 13 over its kind: the bytes a peer could send (the
    /// signature no longer verifies, which decoding does not look at). Nil when decoding refuses them.
    func asReaction(_ references: OpaqueReferences, payload: [UInt8]) throws -> SignedRecord? {
        var bytes = try sign(.opaque(references, payload: payload)).bytes
        bytes[5] = 13
        return try? SignedRecord(bytes: bytes)
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

    @Test("breaking the kind's rules does not make a record invalid: it is read, and is no reaction (inert, §2.9)")
    func inert() throws {
        let broken: [(OpaqueReferences, [UInt8])] = [
            (OpaqueReferences(code: 200, context: nil), [1]),
            (OpaqueReferences(code: 200, context: post, data: [1, 2, 3]), [1]),
            (OpaqueReferences(code: 200, context: post, data: Array(post.bytes)), [1]),
            (OpaqueReferences(code: 200, context: post), [7]),
            (OpaqueReferences(code: 200, context: post), [1, 1]),
            (OpaqueReferences(code: 200, context: post), []),
        ]
        for (references, payload) in broken {
            let record = try #require(try asReaction(references, payload: payload), "\(references) \(payload)")
            #expect(record.header.kindCode == 13)
            #expect(record.body.flatMap(Reaction.init) == nil, "\(references) \(payload)")
        }
        // The control: the same bytes laid out as the kind says are a reaction.
        let good = try #require(try asReaction(OpaqueReferences(code: 200, context: post), payload: [2]))
        #expect(good.body.flatMap(Reaction.init) == Reaction(post: post, emoji: .thumbsUp))
    }

    @Test("refused when this node signs: a node never signs a reaction that breaks the rules")
    func refusedWhenSigning() {
        #expect(throws: RecordError.outOfRange("reaction code 9 must be 0 ... 6")) {
            try Reaction.checkKindRules(.opaque(OpaqueReferences(code: 13, context: post), payload: [9]))
        }
        #expect(throws: RecordError.malformed("a reaction names the post it goes with")) {
            try Reaction.checkKindRules(.opaque(OpaqueReferences(code: 13, context: nil), payload: [1]))
        }
        #expect(throws: RecordError.outOfRange("content length 18 of a reaction must be 17")) {
            try Reaction.checkKindRules(.opaque(OpaqueReferences(code: 13, context: post), payload: [1, 1]))
        }
        #expect(throws: Never.self) {
            try Reaction.checkKindRules(Reaction(post: post, comment: comment, emoji: .sad).body)
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
